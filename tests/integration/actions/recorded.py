"""Recorded GitHub REST and Slack webhook answers, in the shapes those services send.

The bodies follow GitHub's REST reference (API version 2022-11-28) for each endpoint the executors
call, trimmed of fields nothing reads only where the field is a nested URL; error bodies are
GitHub's `{"message", "documentation_url", "status"}` and Slack's plain-text error codes.
"""

from __future__ import annotations

import base64
import difflib
from typing import Any

import httpx

API = "https://api.github.com"
REPO = "shop/boutique"
OWNER = "shop"
HTML = f"https://github.com/{REPO}"
MANIFEST = "kubernetes-manifests/adservice.yaml"
BASE_SHA = "aa218f56b14c9653891f9e74264a383fa43fefbd"
ROLLOUT_SHA = "7638417db6d59f3c431d3e1f261cc637155684cd"
PARENT_SHA = "553c2077f0edc3d5dc5d17262f6aa498e69d6f8e"

MANIFEST_V1 = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: adservice
  labels:
    app: adservice
spec:
  replicas: 5
  selector:
    matchLabels:
      app: adservice
  template:
    metadata:
      labels:
        app: adservice
        version: v1-59dcc9f97
    spec:
      containers:
        - name: server
          image: registry.example.com/boutique/adservice:v1-59dcc9f97
          ports:
            - containerPort: 9555
          resources:
            requests:
              cpu: 200m
              memory: 180Mi
"""
MANIFEST_V2 = (
    MANIFEST_V1.replace("replicas: 5", "replicas: 4")
    .replace("version: v1-59dcc9f97", "version: v2-fd6989b7c")
    .replace("adservice:v1-59dcc9f97", "adservice:v2-fd6989b7c")
)

# The manifest on the default branch as Online Boutique writes it (a Service and a Deployment in one
# file, with the upstream resource requests and limits), plus the comments an owner leaves.
MANIFEST_LIMITS = """# adservice: serves ads to the frontend (owned by team-ads)
apiVersion: v1
kind: Service
metadata:
  name: adservice
spec:
  type: ClusterIP
  selector:
    app: adservice
  ports:
    - name: grpc
      port: 9555
      targetPort: 9555
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: adservice
  labels:
    app: adservice
spec:
  replicas: 3 # matches the HPA floor
  selector:
    matchLabels:
      app: adservice
  template:
    metadata:
      labels:
        app: adservice
    spec:
      terminationGracePeriodSeconds: 5
      containers:
        - name: server
          image: registry.example.com/boutique/adservice:v1-59dcc9f97
          ports:
            - containerPort: 9555
          resources:
            requests:
              cpu: 200m
              memory: 180Mi
            limits:
              cpu: 300m # raised after INC-2291
              memory: "300Mi"
"""
MANIFEST_BLOB = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"


def bare_patch(old: str, new: str) -> str:
    """A file's `patch` as GitHub returns it: `git diff` hunks without the `---`/`+++` lines."""
    lines = list(difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=3))
    return "\n".join(lines[2:])


def _user(login: str = "rootline-bot", uid: int = 583231) -> dict[str, Any]:
    return {
        "login": login,
        "id": uid,
        "node_id": "MDQ6VXNlcjU4MzIzMQ==",
        "avatar_url": f"https://avatars.githubusercontent.com/u/{uid}?v=4",
        "url": f"{API}/users/{login}",
        "html_url": f"https://github.com/{login}",
        "type": "User",
        "site_admin": False,
    }


def label(name: str = "rootline") -> dict[str, Any]:
    """A label object."""
    return {
        "id": 208045946,
        "node_id": "MDU6TGFiZWwyMDgwNDU5NDY=",
        "url": f"{API}/repos/{REPO}/labels/{name}",
        "name": name,
        "description": "",
        "color": "ededed",
        "default": False,
    }


def issue(number: int, title: str, body: str, *, pull: bool = False) -> dict[str, Any]:
    """An issue as the issues API returns it (a pull request carries a `pull_request` key there)."""
    doc: dict[str, Any] = {
        "url": f"{API}/repos/{REPO}/issues/{number}",
        "repository_url": f"{API}/repos/{REPO}",
        "labels_url": f"{API}/repos/{REPO}/issues/{number}/labels{{/name}}",
        "comments_url": f"{API}/repos/{REPO}/issues/{number}/comments",
        "events_url": f"{API}/repos/{REPO}/issues/{number}/events",
        "html_url": f"{HTML}/{'pull' if pull else 'issues'}/{number}",
        "id": 1_000_000 + number,
        "node_id": "I_kwDOAbCdEf5abcde",
        "number": number,
        "title": title,
        "user": _user(),
        "labels": [label()],
        "state": "open",
        "locked": False,
        "assignee": None,
        "assignees": [],
        "milestone": None,
        "comments": 0,
        "created_at": "2023-09-22T16:05:11Z",
        "updated_at": "2023-09-22T16:05:11Z",
        "closed_at": None,
        "author_association": "CONTRIBUTOR",
        "active_lock_reason": None,
        "body": body,
        "reactions": {"url": f"{API}/repos/{REPO}/issues/{number}/reactions", "total_count": 0},
        "state_reason": None,
    }
    if pull:
        doc["pull_request"] = {
            "url": f"{API}/repos/{REPO}/pulls/{number}",
            "html_url": f"{HTML}/pull/{number}",
            "diff_url": f"{HTML}/pull/{number}.diff",
            "patch_url": f"{HTML}/pull/{number}.patch",
            "merged_at": None,
        }
    return doc


def commit(sha: str, message: str, files: list[dict[str, Any]], parent: str = PARENT_SHA) -> dict[str, Any]:
    """A commit as `GET /repos/{owner}/{repo}/commits/{ref}` returns it, with its files' patches."""
    who = {"name": "Release Bot", "email": "release@example.com", "date": "2023-09-22T15:40:02Z"}
    return {
        "sha": sha,
        "node_id": "C_kwDOAbCdEfoAKDc2Mzg0MTdk",
        "commit": {
            "author": who,
            "committer": who,
            "message": message,
            "tree": {
                "sha": "691272480426f78a0138979dd3ce63b77f706feb",
                "url": f"{API}/repos/{REPO}/git/trees/6912",
            },
            "url": f"{API}/repos/{REPO}/git/commits/{sha}",
            "comment_count": 0,
            "verification": {"verified": False, "reason": "unsigned", "signature": None, "payload": None},
        },
        "url": f"{API}/repos/{REPO}/commits/{sha}",
        "html_url": f"{HTML}/commit/{sha}",
        "comments_url": f"{API}/repos/{REPO}/commits/{sha}/comments",
        "author": _user("release-bot", 9919),
        "committer": _user("web-flow", 19864447),
        "parents": [
            {
                "sha": parent,
                "url": f"{API}/repos/{REPO}/commits/{parent}",
                "html_url": f"{HTML}/commit/{parent}",
            }
        ],
        "stats": {
            "total": sum(f["changes"] for f in files),
            "additions": sum(f["additions"] for f in files),
            "deletions": sum(f["deletions"] for f in files),
        },
        "files": files,
    }


def commit_file(path: str, old: str, new: str, status: str = "modified") -> dict[str, Any]:
    """One entry of a commit's `files`."""
    patch = bare_patch(old, new)
    adds = sum(1 for line in patch.splitlines() if line.startswith("+"))
    dels = sum(1 for line in patch.splitlines() if line.startswith("-"))
    return {
        "sha": "bbcd538c8e72b8c175046e27cc8f907076331401",
        "filename": path,
        "status": status,
        "additions": adds,
        "deletions": dels,
        "changes": adds + dels,
        "blob_url": f"{HTML}/blob/{ROLLOUT_SHA}/{path}",
        "raw_url": f"{HTML}/raw/{ROLLOUT_SHA}/{path}",
        "contents_url": f"{API}/repos/{REPO}/contents/{path}?ref={ROLLOUT_SHA}",
        "patch": patch,
    }


def rollout_commit() -> dict[str, Any]:
    """The commit that rolled adservice out as v2-fd6989b7c (it edited the manifest)."""
    return commit(
        ROLLOUT_SHA,
        "adservice: roll out v2-fd6989b7c\n\nCanary rollout, 4 replicas.",
        [commit_file(MANIFEST, MANIFEST_V1, MANIFEST_V2)],
    )


def repository(default_branch: str = "main") -> dict[str, Any]:
    """`GET /repos/{owner}/{repo}` (the fields a client reads, and their neighbours)."""
    return {
        "id": 1296269,
        "node_id": "MDEwOlJlcG9zaXRvcnkxMjk2MjY5",
        "name": REPO.split("/")[1],
        "full_name": REPO,
        "owner": _user(OWNER, 1),
        "private": True,
        "html_url": HTML,
        "url": f"{API}/repos/{REPO}",
        "default_branch": default_branch,
        "visibility": "private",
        "permissions": {"admin": False, "maintain": False, "push": True, "triage": True, "pull": True},
    }


def ref(branch: str, sha: str) -> dict[str, Any]:
    """A git reference (`GET .../git/ref/heads/{branch}`, `POST .../git/refs`)."""
    return {
        "ref": f"refs/heads/{branch}",
        "node_id": "MDM6UmVmcmVmcy9oZWFkcy9mZWF0dXJlQQ==",
        "url": f"{API}/repos/{REPO}/git/refs/heads/{branch}",
        "object": {"type": "commit", "sha": sha, "url": f"{API}/repos/{REPO}/git/commits/{sha}"},
    }


def contents(path: str, text: str, sha: str = "3d21ec53a331a6f037a91c368710b99387d012c1") -> dict[str, Any]:
    """A file from the contents API: base64 in lines of 60 characters, as GitHub sends it."""
    encoded = base64.b64encode(text.encode()).decode()
    wrapped = "\n".join(encoded[i : i + 60] for i in range(0, len(encoded), 60)) + "\n"
    return {
        "type": "file",
        "encoding": "base64",
        "size": len(text.encode()),
        "name": path.rsplit("/", 1)[-1],
        "path": path,
        "content": wrapped,
        "sha": sha,
        "url": f"{API}/repos/{REPO}/contents/{path}?ref=main",
        "git_url": f"{API}/repos/{REPO}/git/blobs/{sha}",
        "html_url": f"{HTML}/blob/main/{path}",
        "download_url": f"https://raw.githubusercontent.com/{REPO}/main/{path}",
        "_links": {
            "self": f"{API}/repos/{REPO}/contents/{path}?ref=main",
            "git": f"{API}/repos/{REPO}/git/blobs/{sha}",
            "html": f"{HTML}/blob/main/{path}",
        },
    }


def file_committed(path: str, commit_sha: str = "7a3b9c1d2e4f5061728394a5b6c7d8e9f0a1b2c3") -> dict[str, Any]:
    """`PUT .../contents/{path}`: the new file and the commit that wrote it."""
    return {
        "content": {
            "name": path.rsplit("/", 1)[-1],
            "path": path,
            "sha": "95b966ae1c166bd92f8ae7d1c313e738c731dfc3",
            "size": 9,
            "url": f"{API}/repos/{REPO}/contents/{path}",
            "html_url": f"{HTML}/blob/rootline/{path}",
            "type": "file",
        },
        "commit": {
            "sha": commit_sha,
            "node_id": "MDY6Q29tbWl0N2EzYjljMWQ=",
            "url": f"{API}/repos/{REPO}/git/commits/{commit_sha}",
            "html_url": f"{HTML}/commit/{commit_sha}",
            "message": "Revert",
            "parents": [{"sha": BASE_SHA, "url": f"{API}/repos/{REPO}/git/commits/{BASE_SHA}"}],
        },
    }


def pull(number: int, branch: str, title: str, body: str) -> dict[str, Any]:
    """A pull request (`POST /repos/{owner}/{repo}/pulls`, or an item of the list)."""
    return {
        "url": f"{API}/repos/{REPO}/pulls/{number}",
        "id": 1_500_000 + number,
        "node_id": "PR_kwDOAbCdEf5abcdef",
        "html_url": f"{HTML}/pull/{number}",
        "diff_url": f"{HTML}/pull/{number}.diff",
        "patch_url": f"{HTML}/pull/{number}.patch",
        "issue_url": f"{API}/repos/{REPO}/issues/{number}",
        "number": number,
        "state": "open",
        "locked": False,
        "title": title,
        "user": _user(),
        "body": body,
        "labels": [],
        "created_at": "2023-09-22T16:06:40Z",
        "updated_at": "2023-09-22T16:06:40Z",
        "closed_at": None,
        "merged_at": None,
        "merge_commit_sha": None,
        "draft": False,
        "head": {
            "label": f"{OWNER}:{branch}",
            "ref": branch,
            "sha": "7a3b9c1d2e4f5061728394a5b6c7d8e9f0a1b2c3",
        },
        "base": {"label": f"{OWNER}:main", "ref": "main", "sha": BASE_SHA},
        "author_association": "CONTRIBUTOR",
        "maintainer_can_modify": True,
    }


def error(status: int, message: str, **headers: str) -> httpx.Response:
    """A GitHub error answer."""
    body: dict[str, Any] = {
        "message": message,
        "documentation_url": "https://docs.github.com/rest",
        "status": str(status),
    }
    if status == 422:
        body["errors"] = [{"resource": "Issue", "code": "custom", "field": "labels", "message": message}]
    return httpx.Response(status, json=body, headers=headers)


def slack(status: int, text: str, **headers: str) -> httpx.Response:
    """A Slack incoming-webhook answer: plain text, `ok` or an error code."""
    return httpx.Response(status, text=text, headers={"content-type": "text/html", **headers})
