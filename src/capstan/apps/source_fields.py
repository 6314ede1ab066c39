"""Where in its repository a service builds from: `root_dir` (a monorepo's directory; "" is the
repository's root), `dockerfile_path` (relative to it) and `watch_paths` (the glob patterns,
relative to the repository's root, of the files whose change a push must touch to deploy).

Mixed into the request and response shapes of `apps/schemas.py`; a path that is absolute or
leaves the repository is refused (400) before anything is written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from pydantic import AfterValidator, Field

from capstan.apps.watch_paths import check_pattern
from capstan.schemas import Request, Response
from capstan.validation import pattern

if TYPE_CHECKING:
    from capstan.apps.models import Service

DEFAULT_DOCKERFILE = "Dockerfile"
MAX_WATCH_PATHS = 20
_PATH_TEXT = pattern(
    r"^[\x20-\x7e]{0,1024}$", "at most 1024 printable ASCII characters (spaces allowed)"
)


def repository_path(path: str) -> str:
    """`path` inside the repository, normalized (`./a//b/` is `a/b`; `.` is ""); ValueError
    for an absolute path or one with a `..` segment (it could leave the repository)."""
    if path.startswith("/") or "\\" in path:
        raise ValueError("must be relative to the repository (no leading / and no \\)")
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise ValueError("must stay inside the repository (no '..')")
    return "/".join(parts)


def _dockerfile(path: str) -> str:
    normalized = repository_path(path)
    if not normalized:
        raise ValueError("must name a file")
    return normalized


RootDir = Annotated[
    str,
    Field(
        pattern=_PATH_TEXT,
        examples=["services/api"],
        description='The directory the build runs in, relative to the repository\'s root ("": '
        "the root); absolute paths and '..' are refused.",
    ),
    AfterValidator(repository_path),
]
DockerfilePath = Annotated[
    str,
    Field(
        pattern=_PATH_TEXT,
        min_length=1,
        examples=["Dockerfile"],
        description="The Dockerfile, relative to root_dir; the build's context is root_dir.",
    ),
    AfterValidator(_dockerfile),
]
WatchPath = Annotated[
    str,
    Field(pattern=_PATH_TEXT, min_length=1, examples=["services/api/**"]),
    AfterValidator(check_pattern),
]
WatchPaths = Annotated[
    list[WatchPath],
    Field(
        max_length=MAX_WATCH_PATHS,
        description="Glob patterns relative to the repository's root (`*` within a directory, "
        "`**` across directories). With auto_deploy, a push none of whose changed files match "
        "one does not deploy; empty: every push does.",
    ),
]


class ContainerSourceCreate(Request):
    root_dir: RootDir = ""
    dockerfile_path: DockerfilePath = DEFAULT_DOCKERFILE
    watch_paths: WatchPaths = []


# PATCH fields: left out (None) changes nothing. Not `X | None`: pydantic would report a bad path
# once per member of the union; a null is refused as not a string (or list).
class ContainerSourceUpdate(Request):
    root_dir: RootDir = None  # type: ignore[assignment]
    dockerfile_path: DockerfilePath = None  # type: ignore[assignment]
    watch_paths: WatchPaths = None  # type: ignore[assignment]


class ContainerSourceOut(Response):
    root_dir: str = ""
    dockerfile_path: str = DEFAULT_DOCKERFILE
    watch_paths: list[str] = []


class SiteSourceCreate(Request):
    root_dir: RootDir = ""
    watch_paths: WatchPaths = []


class SiteSourceUpdate(Request):
    root_dir: RootDir = None  # type: ignore[assignment]
    watch_paths: WatchPaths = None  # type: ignore[assignment]


class SiteSourceOut(Response):
    root_dir: str = ""
    watch_paths: list[str] = []


def container_source(service: Service) -> dict[str, Any]:
    """A web server's or worker's source settings, as its responses show them."""
    return {
        "root_dir": service.root_dir,
        "dockerfile_path": service.dockerfile_path or DEFAULT_DOCKERFILE,
        "watch_paths": service.watch_paths or [],
    }


def stored(service: Service, field: str) -> Any:
    """A setting as its service has it, with the defaults of rows made before these settings
    existed (no watch paths; `Dockerfile`), so a file or a PATCH giving the default changes
    nothing."""
    if field == "watch_paths":
        return service.watch_paths or []
    if field == "dockerfile_path":
        return service.dockerfile_path or DEFAULT_DOCKERFILE
    return getattr(service, field)
