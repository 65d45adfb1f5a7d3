"""Reverting and applying the bare hunks GitHub's commit API returns (`files[].patch`)."""

from __future__ import annotations

import difflib

import pytest

from rca.actions.diffs import FileDiff, PatchError, parse_hunks, unified

BEFORE = "".join(f"line {i}\n" for i in range(1, 21))
AFTER = BEFORE.replace("line 3\n", "line 3 changed\n").replace("line 15\n", "line 15\nline 15b\n")


def bare_patch(old: str, new: str) -> str:
    """What GitHub puts in `files[].patch`: the hunks of `git diff`, without the file headers."""
    lines = list(difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=3))
    return "\n".join(lines[2:])


def test_a_reversed_patch_turns_the_new_text_back_into_the_old() -> None:
    change = FileDiff("app.cfg", "modified", tuple(parse_hunks(bare_patch(BEFORE, AFTER))))
    assert change.apply(BEFORE) == AFTER
    revert = change.reversed()
    assert revert.apply(AFTER) == BEFORE
    text = revert.unified()
    assert text.startswith("diff --git a/app.cfg b/app.cfg\n--- a/app.cfg\n+++ b/app.cfg\n@@ -1,6 +1,6 @@")
    assert "-line 3 changed\n+line 3\n" in text  # removals first within a run of changes
    assert "-line 15b\n" in text


def test_reversing_an_added_file_removes_it_and_a_removed_one_comes_back() -> None:
    added = FileDiff("new.txt", "added", tuple(parse_hunks(bare_patch("", "a\nb\n"))))
    gone = added.reversed()
    assert gone.status == "removed"
    assert gone.apply("a\nb\n") is None
    assert "+++ /dev/null" in gone.unified()
    back = gone.reversed()
    assert back.status == "added"
    assert back.apply("") == "a\nb\n"
    assert "--- /dev/null" in unified([back])


def test_a_revert_that_no_longer_applies_is_refused_not_forced() -> None:
    revert = FileDiff("app.cfg", "modified", tuple(parse_hunks(bare_patch(BEFORE, AFTER)))).reversed()
    moved_on = AFTER.replace("line 3 changed", "line 3 changed again")
    with pytest.raises(PatchError, match="has changed since"):
        revert.apply(moved_on)


def test_a_patch_without_a_trailing_newline_marker_applies() -> None:
    patch = "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file"
    assert FileDiff("f", "modified", tuple(parse_hunks(patch))).apply("a\nb") == "a\nc"


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ("", "no hunks"),
        ("hello\n@@ -1 +1 @@\n-a\n+b", "before the first hunk"),
        ("@@ -1 +1 @@\n-a\n*b", "not a patch line"),
        ("@@ -1,2 +1 @@\n-a\n+b", "counts 1 old and 1 new"),
    ],
)
def test_malformed_patches_are_refused(patch: str, message: str) -> None:
    with pytest.raises(PatchError, match=message):
        parse_hunks(patch)


def test_overlapping_hunks_are_refused() -> None:
    hunks = tuple(parse_hunks("@@ -2 +2 @@\n-b\n+B\n@@ -1 +1 @@\n-a\n+A"))
    with pytest.raises(PatchError, match="overlapping"):
        FileDiff("f", "modified", hunks).apply("a\nb\n")
