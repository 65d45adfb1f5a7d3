"""Unified diffs: reversing a commit's per-file patch, writing it with file headers, applying it.

GitHub's commit API gives each file's change as bare hunks (`files[].patch`, no `---`/`+++` lines).
The revert of a commit is those hunks reversed; a pull request needs the reverted file contents, so
the reversed hunks are also applied to the file as it is on the branch, refusing when it has moved on
(the context no longer matches) rather than guessing.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$")

FileStatus = Literal["modified", "added", "removed"]


class PatchError(ValueError):
    """A patch is malformed, or does not apply to the text it was meant for."""


@dataclass(frozen=True, slots=True)
class Hunk:
    """One hunk: where it starts in the old and new text, and its lines with their ' ', '-', '+'."""

    old_start: int
    old_count: int
    new_start: int
    new_count: int
    section: str
    lines: tuple[str, ...]

    def header(self) -> str:
        """The `@@ -a,b +c,d @@` line."""
        return f"@@ -{self.old_start},{self.old_count} +{self.new_start},{self.new_count} @@{self.section}"

    def reversed(self) -> Hunk:
        """The same change undone: old and new swapped, removals listed before additions."""
        flipped = [_FLIP.get(line[:1], line[:1]) + line[1:] for line in self.lines]
        return Hunk(
            self.new_start, self.new_count, self.old_start, self.old_count, self.section, _ordered(flipped)
        )


_FLIP = {"-": "+", "+": "-"}


def _ordered(lines: list[str]) -> tuple[str, ...]:
    """Within each run of changed lines, removals first (as diff tools write them)."""
    out: list[str] = []
    run: list[str] = []
    for line in [*lines, " "]:
        if line[:1] in "+-":
            run.append(line)
            continue
        out += [x for x in run if x.startswith("-")] + [x for x in run if x.startswith("+")]
        run = []
        out.append(line)
    return tuple(out[:-1])


def parse_hunks(patch: str) -> list[Hunk]:
    """The hunks of a bare patch (GitHub's `files[].patch`); raises PatchError when malformed."""
    hunks: list[Hunk] = []
    current: list[str] | None = None
    header: re.Match[str] | None = None
    for line in patch.splitlines():
        match = _HUNK.match(line)
        if match:
            if header is not None and current is not None:
                hunks.append(_hunk(header, current))
            header, current = match, []
        elif current is None:
            raise PatchError(f"patch text before the first hunk: {line[:60]!r}")
        elif line[:1] in (" ", "-", "+", "\\") or line == "":
            current.append(line if line else " ")
        else:
            raise PatchError(f"not a patch line: {line[:60]!r}")
    if header is not None and current is not None:
        hunks.append(_hunk(header, current))
    if not hunks:
        raise PatchError("the patch has no hunks")
    return hunks


def _hunk(header: re.Match[str], lines: list[str]) -> Hunk:
    old_start, old_count, new_start, new_count, section = header.groups()
    hunk = Hunk(
        int(old_start),
        1 if old_count is None else int(old_count),
        int(new_start),
        1 if new_count is None else int(new_count),
        section,
        tuple(lines),
    )
    old = sum(1 for x in lines if x[:1] in " -")
    new = sum(1 for x in lines if x[:1] in " +")
    if (old, new) != (hunk.old_count, hunk.new_count):
        raise PatchError(f"hunk {hunk.header()!r} counts {old} old and {new} new lines")
    return hunk


@dataclass(frozen=True, slots=True)
class FileDiff:
    """One file's change: its path, what happens to it, and its hunks."""

    path: str
    status: FileStatus
    hunks: tuple[Hunk, ...]

    def reversed(self) -> FileDiff:
        """The change undone: an added file is removed again and a removed one restored."""
        status: FileStatus = (
            "removed" if self.status == "added" else "added" if self.status == "removed" else "modified"
        )
        return FileDiff(self.path, status, tuple(h.reversed() for h in self.hunks))

    def unified(self) -> str:
        """The change as `git diff` writes it (headers, then hunks)."""
        old = "/dev/null" if self.status == "added" else f"a/{self.path}"
        new = "/dev/null" if self.status == "removed" else f"b/{self.path}"
        lines = [f"diff --git a/{self.path} b/{self.path}", f"--- {old}", f"+++ {new}"]
        for hunk in self.hunks:
            lines.append(hunk.header())
            lines.extend(hunk.lines)
        return "\n".join(lines) + "\n"

    def apply(self, text: str) -> str | None:
        """The file after this change (None when the change removes it); raises PatchError when the
        text is not what the hunks expect."""
        if self.status == "removed":
            return None
        source = [] if self.status == "added" else text.splitlines()
        ending = "\n" if self.status == "added" or text.endswith("\n") else ""
        out: list[str] = []
        at = 0  # next unread line of `source`
        for hunk in self.hunks:
            start = max(hunk.old_start - 1, 0) if hunk.old_count else hunk.old_start
            if start < at:
                raise PatchError(f"{self.path}: overlapping hunks at {hunk.header()!r}")
            out += source[at:start]
            at = start
            for line in hunk.lines:
                kind, body = line[:1], line[1:]
                if kind == "\\":
                    continue  # "\ No newline at end of file"
                if kind in " -":
                    if at >= len(source) or source[at] != body:
                        raise PatchError(f"{self.path} has changed since: line {at + 1} is not {body[:60]!r}")
                    at += 1
                if kind in " +":
                    out.append(body)
        out += source[at:]
        return "\n".join(out) + ending if out else ""


def modification(path: str, old: str, new: str, context: int = 3) -> FileDiff:
    """The edit that turns `old` into `new` (the text of `path`), as `git diff` would write it; raises
    PatchError when the two are the same, since an empty diff proposes nothing."""
    lines = list(difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=context))
    if not lines:
        raise PatchError(f"{path}: the edit changes nothing")
    return FileDiff(path, "modified", tuple(parse_hunks("\n".join(lines[2:]))))


def unified(diffs: Iterable[FileDiff]) -> str:
    """Several files' changes as one unified diff."""
    return "".join(d.unified() for d in diffs)


@dataclass(frozen=True, slots=True)
class Change:
    """Files changed for one reason, as a patch or pull request proposes them (a revert, a configuration
    change); `note` says what and why."""

    title: str
    files: tuple[FileDiff, ...]
    note: str

    @property
    def diff(self) -> str:
        """The change as one unified diff."""
        return unified(self.files)
