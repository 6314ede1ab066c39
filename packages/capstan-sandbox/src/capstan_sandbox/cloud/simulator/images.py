"""The images sandbox builds pushed: their layer (the Docker build context, as a tar) and what
the base image gives them, so the ECS simulator can start a task the way the image allows.

What an image has is read from its Dockerfile's `FROM` line (and `RUN` lines installing curl),
after the images people use: distroless and `scratch` have no shell and no curl; alpine and
busybox have `sh` and busybox's `wget`; Debian/Ubuntu and the `-slim` images have `sh` only; the
full `python`/`node` images also have curl. An image the sandbox did not build is not judged.
"""

from __future__ import annotations

import io
import re
import tarfile
import threading
from dataclasses import dataclass
from typing import Any

_FROM = re.compile(r"^\s*FROM\s+(?:--platform=\S+\s+)?(?P<image>\S+)", re.IGNORECASE | re.MULTILINE)
_INSTALLS_CURL = re.compile(
    r"^\s*RUN\b.*\b(apt-get|apt|apk|yum|dnf|microdnf)\b.*\b(install|add)\b.*\bcurl\b",
    re.IGNORECASE | re.MULTILINE,
)


@dataclass(frozen=True)
class Image:
    base: str
    tools: frozenset[str]
    layer: bytes

    def files(self) -> dict[str, bytes]:
        """The layer's files by path."""
        found = {}
        with tarfile.open(fileobj=io.BytesIO(self.layer)) as layer:
            for member in layer.getmembers():
                extracted = layer.extractfile(member)
                if extracted is not None:
                    found[member.name] = extracted.read()
        return found


def tools_of(dockerfile: str) -> tuple[str, frozenset[str]]:
    """The last stage's base image and the programs it has (module docstring)."""
    bases = [match["image"].lower() for match in _FROM.finditer(dockerfile)]
    base = bases[-1] if bases else "scratch"
    name = base.rsplit("/", 1)[-1]
    if base == "scratch" or "distroless" in base or base.startswith("cgr.dev/chainguard/static"):
        tools: set[str] = set()
    elif name.startswith(("alpine", "busybox")) or "-alpine" in name or ":alpine" in name:
        tools = {"sh", "wget"}
    elif name.startswith(("python", "node")) and not any(
        marker in name for marker in ("slim", "alpine")
    ):
        tools = {"sh", "curl", "wget"}
    else:
        tools = {"sh"}
    if tools and _INSTALLS_CURL.search(dockerfile):
        tools.add("curl")
    return base, frozenset(tools)


_lock = threading.Lock()
_images: dict[tuple[str, str, str], Image] = {}


def remember(account_id: str, region: str, uri: str, dockerfile: str, layer: bytes) -> None:
    base, tools = tools_of(dockerfile)
    with _lock:
        _images[(account_id, region, uri)] = Image(base, tools, layer)


def image(account_id: str, region: str, uri: str) -> Image | None:
    with _lock:
        return _images.get((account_id, region, uri))


def _program(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def missing_tool(found: Image, container: dict[str, Any]) -> str | None:
    """Why a container of the image cannot run or stay healthy (a program it lacks), or None."""
    entry = [str(part) for part in container.get("entryPoint") or []]
    if entry and _program(entry[0]) in ("sh", "bash") and _program(entry[0]) not in found.tools:
        return f'exec: "{entry[0]}": executable file not found in $PATH'
    command = [str(part) for part in (container.get("healthCheck") or {}).get("command") or []]
    if not command[1:]:
        return None
    if command[0] == "CMD-SHELL":
        if "sh" not in found.tools:
            return 'health check: exec: "/bin/sh": executable file not found in $PATH'
        program = _program(command[1].split()[0])
    else:
        program = _program(command[1])
    if program in ("curl", "wget") and program not in found.tools:
        return f"health check: {program}: not found"
    return None
