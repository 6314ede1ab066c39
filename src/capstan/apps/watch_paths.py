"""Which pushes deploy a service with `watch_paths`: those that change a file matching one of its
patterns. Patterns are globs relative to the repository's root, matched against the whole path
as GitHub's push payload lists it (`commits[].added/modified/removed`): `*` and `?` stay within
one directory, `[…]` is a character class, `**` as a whole segment crosses any number of
directories (none included), and a pattern ending in `/` matches everything under it. This is
gitignore-style globbing without its negations and its "a pattern without / matches at any
depth" rule, so a pattern means one thing wherever it is read (decision 0128)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

# GitHub's push payload lists at most this many commits; a push of more may have changed files
# the payload does not name.
PAYLOAD_COMMITS = 2048


def changed_files(commits: Sequence[Sequence[str]]) -> list[str] | None:
    """The files a push changed, from its payload's commits (each commit's added, modified and
    removed files); None when the payload cannot tell: no commit listed (a force-push to an
    older commit, a new branch at an existing commit) or as many as GitHub lists at most. A
    push whose changes are unknown is taken to change every file."""
    if not commits or len(commits) >= PAYLOAD_COMMITS:
        return None
    return sorted({path for commit in commits for path in commit})


def check_pattern(pattern: str) -> str:
    """`pattern` as stored (ValueError when it is absolute, leaves the repository or does not
    compile)."""
    if pattern.startswith("/") or "\\" in pattern:
        raise ValueError("must be relative to the repository (no leading / and no \\)")
    if ".." in pattern.split("/"):
        raise ValueError("must stay inside the repository (no '..')")
    try:
        _compiled(pattern)
    except re.error as error:
        raise ValueError(f"is not a valid glob pattern ({error.msg})") from None
    return pattern


@lru_cache(maxsize=512)
def _compiled(pattern: str) -> re.Pattern[str]:
    if pattern.endswith("/"):
        pattern += "**"
    segments = [segment for segment in pattern.split("/") if segment not in ("", ".")]
    regex = ""
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            # Any number of whole directories (or, last, anything at all below).
            regex += ".*" if last else "(?:[^/]+/)*"
            continue
        regex += _segment(segment) + ("" if last else "/")
    return re.compile(regex, re.DOTALL)


def _segment(segment: str) -> str:
    out = ""
    index = 0
    while index < len(segment):
        character = segment[index]
        if character == "*":
            out += "[^/]*"
        elif character == "?":
            out += "[^/]"
        elif character == "[":
            end = segment.find("]", index + 2)
            if end < 0:
                out += re.escape(character)
            else:
                body = segment[index + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out += "[" + body.replace("\\", "\\\\") + "]"
                index = end
        else:
            out += re.escape(character)
        index += 1
    return out


def matches(pattern: str, path: str) -> bool:
    return _compiled(pattern).fullmatch(path) is not None


def watched(patterns: Iterable[str], changed: Iterable[str]) -> str | None:
    """The first changed file a pattern matches, or None when none does."""
    compiled = [_compiled(pattern) for pattern in patterns]
    for path in changed:
        if any(regex.fullmatch(path) for regex in compiled):
            return path
    return None
