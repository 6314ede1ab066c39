"""The tools a sandbox build's shell finds on its PATH: `git`, `docker`, `aws` and `bash`.

A standalone script (standard library only, so each call starts fast): the build runner copies it
into a build's tool directory under each tool's name and runs the buildspec's own commands in a
real bash with only that directory on the PATH (`build_shell`). Each tool does what the real one
does to the files a build can see, and nothing more:

- `git [-c k=v]… clone [--quiet] [-c k=v]… URL DIR` takes the credentials (the URL's user info,
  or an `http.extraHeader` given with `-c`) and writes `DIR/.git/config` as git does: the remote
  URL exactly as given (credentials included) and the `-c` options given *after* `clone` (git
  persists those, not the ones before it). `git checkout [--quiet] REF` inside the clone fetches
  and writes the repository's files at REF: its `capstan-sandbox.json` and the files it declares
  under `image_files` (a small Python app on `python:3.12-slim` by default).
- `docker login` reads the password (signed in to Docker Hub without a server name);
  `docker build [-f DOCKERFILE] -t TAG CONTEXT` packs the context as a tar layer, leaving out
  what `.dockerignore` names (a Dockerfile missing at `-f` fails naming it), and pulls its
  Docker Hub base images anonymously unless signed in — refused past
  `$CAPSTAN_SANDBOX_DOCKERHUB_PULLS_LEFT`, as Docker Hub answers 429; `docker push TAG` marks a
  built image pushed.
- `aws ecr get-login-password` prints a password; nothing else of the CLI is simulated.
- `bash -c COMMAND` is the build command: the sandbox runs no command a repository asks for; it
  does what the checked-out `capstan-sandbox.json` says (`{"build": "fail", "error": …}` fails;
  without a build command, `docker build` fails so, as the Dockerfile's own build step would).

What the tools leave for the runner (built and pushed images, their layers, the remotes' access)
goes to `$CAPSTAN_SANDBOX_BUILD_STATE`, outside the build's directory.
"""

from __future__ import annotations

import os
import sys

# Not `typing.TYPE_CHECKING`: importing typing alone costs a tool ~10 ms (it imports `re`).
# Type checkers take any `TYPE_CHECKING` as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

# Every tool is a process of its own, and a build starts eight: each function imports what its
# command needs, and nothing is imported here but `os` and `sys`. `aws ecr get-login-password`
# and `docker login` import nothing more (not even `re`, which json, base64, pathlib and
# urllib.parse each bring); only `git checkout` imports `urllib.request` (with http.client and
# email), only `docker build` `tarfile`. Importing them all was most of a build's time in a
# zero-delay sandbox.

SANDBOX_FILE = "capstan-sandbox.json"
DEFAULT_IMAGE_FILES = {
    "Dockerfile": (
        "FROM python:3.12-slim\nWORKDIR /app\nCOPY . /app\nEXPOSE 8080\n"
        'CMD ["python", "/app/app.py"]\n'
    ),
    "app.py": "print('hello from the sandbox')\n",
}


def _state_dir() -> str:
    return os.environ["CAPSTAN_SANDBOX_BUILD_STATE"]


def _state() -> Path:
    from pathlib import Path

    return Path(_state_dir())


def _fail(message: str, status: int = 1) -> int:
    print(message, file=sys.stderr)
    return status


# -- git -------------------------------------------------------------------------------------


def _token_of(url: str, config: dict[str, str]) -> str | None:
    import base64
    import urllib.parse

    parts = urllib.parse.urlsplit(url)
    if parts.password:
        return urllib.parse.unquote(parts.password)
    header = config.get("http.extraheader", "")
    name, _, value = header.partition(":")
    scheme, _, credentials = value.strip().partition(" ")
    if name.strip().lower() != "authorization":
        return None
    if scheme.lower() == "basic":
        decoded = base64.b64decode(credentials.strip()).decode()
        return decoded.partition(":")[2] or None
    if scheme.lower() in ("bearer", "token"):
        return credentials.strip() or None
    return None


def _repository_of(url: str) -> str:
    import urllib.parse

    parts = urllib.parse.urlsplit(url)
    base = urllib.parse.urlsplit(os.environ.get("GIT_CLONE_BASE", ""))
    path = parts.path
    if path.startswith(base.path):
        path = path[len(base.path) :]
    return path.strip("/").removesuffix(".git")


def _api(path: str, token: str | None) -> dict[str, object]:
    import json
    import urllib.request

    url = os.environ.get("GIT_API_URL", "").rstrip("/") + path
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"not a git host: {url}")
    request = urllib.request.Request(url)  # noqa: S310 - http(s) only, checked above
    if token:
        request.add_header("Authorization", f"token {token}")
    request.add_header("Accept", "application/vnd.github+json")
    with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310 - the git host
        found = json.load(answer)
    return found if isinstance(found, dict) else {}


def _config_pairs(args: list[str]) -> tuple[dict[str, str], list[str]]:
    config: dict[str, str] = {}
    rest: list[str] = []
    items = iter(args)
    for arg in items:
        if arg in ("-c", "--config"):
            key, _, value = next(items, "").partition("=")
            config[key.lower()] = value
        else:
            rest.append(arg)
    return config, rest


def _clone(global_config: dict[str, str], args: list[str]) -> int:
    import hashlib
    import json
    import urllib.parse
    from pathlib import Path

    persisted, rest = _config_pairs(args)
    positional = [arg for arg in rest if not arg.startswith("-")]
    if len(positional) != 2:
        return _fail("usage: git clone [--quiet] <repo> <dir>", 129)
    url, directory = positional
    token = _token_of(url, {**global_config, **persisted})
    repository = _repository_of(url)
    target = Path(directory)
    (target / ".git").mkdir(parents=True)
    lines = [
        "[core]",
        "\trepositoryformatversion = 0",
        "\tfilemode = true",
        "\tbare = false",
        "\tlogallrefupdates = true",
        '[remote "origin"]',
        f"\turl = {url}",
        "\tfetch = +refs/heads/*:refs/remotes/origin/*",
    ]
    for key, value in persisted.items():
        section, _, name = key.rpartition(".")
        lines += [f"[{section}]", f"\t{name} = {value}"]
    (target / ".git" / "config").write_text("\n".join(lines) + "\n")
    (target / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    # What git keeps in .git/objects: here, where to read the files from (outside the build).
    parts = urllib.parse.urlsplit(url)
    shown = parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()
    remote = {"repository": repository, "token": token, "shown": shown}
    key = hashlib.sha256(str(target.resolve()).encode()).hexdigest()
    (_state() / "remotes").mkdir(exist_ok=True)
    (_state() / "remotes" / key).write_text(json.dumps(remote))
    return 0


def _checkout(args: list[str]) -> int:
    import base64
    import hashlib
    import json
    import urllib.error
    from pathlib import Path

    refs = [arg for arg in args if not arg.startswith("-")]
    root = Path.cwd()
    key = hashlib.sha256(str(root.resolve()).encode()).hexdigest()
    remote_file = _state() / "remotes" / key
    if len(refs) != 1 or not (root / ".git").is_dir() or not remote_file.exists():
        return _fail("fatal: not a git repository (or any of the parent directories): .git", 128)
    remote = json.loads(remote_file.read_text())
    path = f"/repos/{remote['repository']}/contents/{SANDBOX_FILE}?ref={refs[0]}"
    try:
        content = _api(path, remote["token"]).get("content", "")
        document = json.loads(base64.b64decode(str(content)))
    except urllib.error.HTTPError as error:
        if error.code in (401, 403):
            return _fail(f"fatal: Authentication failed for '{remote['shown']}'", 128)
        return _fail(f"fatal: reference is not a tree: {refs[0]}", 128)
    except (urllib.error.URLError, ValueError) as error:
        return _fail(f"fatal: unable to access '{remote['shown']}': {error}", 128)
    files = dict(document.get("image_files") or DEFAULT_IMAGE_FILES)
    files[SANDBOX_FILE] = json.dumps(document)
    for name, text in files.items():
        destination = root / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_text(str(text))
    (root / ".git" / "HEAD").write_text(f"{refs[0]}\n")
    return 0


def git(args: list[str]) -> int:
    config, rest = {}, list(args)
    while len(rest) >= 2 and rest[0] == "-c":
        key, _, value = rest[1].partition("=")
        config[key.lower()] = value
        rest = rest[2:]
    if rest[:1] == ["clone"]:
        return _clone(config, rest[1:])
    if rest[:1] == ["checkout"]:
        return _checkout(rest[1:])
    return _fail(f"git: '{' '.join(rest[:1])}' is not simulated in the sandbox", 1)


# -- docker ----------------------------------------------------------------------------------


def _ignored(relative: str, patterns: list[str]) -> bool:
    import fnmatch

    parts = relative.split("/")
    prefixes = ["/".join(parts[: index + 1]) for index in range(len(parts))]
    return any(fnmatch.fnmatchcase(prefix, pattern) for pattern in patterns for prefix in prefixes)


def _layer(context: Path) -> bytes:
    import io
    import tarfile

    ignore = context / ".dockerignore"
    patterns = []
    if ignore.exists():
        for line in ignore.read_text().splitlines():
            line = line.strip().strip("/")
            if line and not line.startswith("#"):
                patterns.append(line.removeprefix("./"))
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as layer:
        for path in sorted(context.rglob("*")):
            relative = path.relative_to(context).as_posix()
            if path.is_dir() or _ignored(relative, patterns):
                continue
            data = path.read_bytes()
            info = tarfile.TarInfo(f"app/{relative}")
            info.size = len(data)
            layer.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


_DOCKER_HUB = (
    "docker.io",
    "index.docker.io",
    "registry-1.docker.io",
    "https://index.docker.io/v1/",
)
_LIMITED = (
    "ERROR: failed to solve: {image}: failed to resolve source metadata for {image}: 429 Too Many "
    "Requests - Server message: toomanyrequests: You have reached your unauthenticated pull rate "
    "limit. https://www.docker.com/increase-rate-limit"
)


def _docker_hub_images(dockerfile: str) -> list[str]:
    """The base images of a Dockerfile that come from Docker Hub (no registry host in the name),
    leaving out earlier stages named with `AS`."""
    stages: set[str] = set()
    found: list[str] = []
    for line in dockerfile.splitlines():
        words = line.split()
        if not words or words[0].upper() != "FROM":
            continue
        words = [word for word in words[1:] if not word.startswith("--")]
        if not words:
            continue
        image = words[0]
        if len(words) >= 3 and words[1].upper() == "AS":
            stages.add(words[2].lower())
        first = image.split("/", 1)[0]
        registry = "/" in image and ("." in first or ":" in first or first == "localhost")
        if image.lower() in stages or image == "scratch" or (registry and first != "docker.io"):
            continue
        if image not in found:
            found.append(image)
    return found


def _login(args: list[str]) -> int:
    sys.stdin.read()
    servers = [arg for arg in args if not arg.startswith("-")]
    username = args[args.index("--username") + 1] if "--username" in args else ""
    servers = [server for server in servers if server != username]
    if not servers or servers[-1] in _DOCKER_HUB:
        path = os.path.join(_state_dir(), "dockerhub_login")  # no pathlib: see the imports
        with open(path, "w") as signed_in:
            signed_in.write(username)
    print("Login Succeeded")
    return 0


def docker(args: list[str]) -> int:
    if args[:1] == ["login"]:
        return _login(args[1:])
    import hashlib
    import json
    from pathlib import Path

    images = _state() / "images.json"
    built = json.loads(images.read_text()) if images.exists() else {}
    if args[:1] == ["build"]:
        tag = args[args.index("-t") + 1] if "-t" in args else None
        context = Path(args[-1])
        # `-f` is relative to the working directory, as docker reads it; the default is the
        # context's own Dockerfile.
        named = args[args.index("-f") + 1] if "-f" in args[:-1] else None
        path = Path(named) if named else context / "Dockerfile"
        if tag is None or not path.is_file():
            return _fail(
                f"ERROR: failed to solve: failed to read dockerfile: open {named or 'Dockerfile'}: "
                "no such file or directory",
                1,
            )
        dockerfile = path.read_text()
        broken = _declared_failure(_source_root(context) / SANDBOX_FILE)
        if broken is not None:  # the Dockerfile's own build step (a RUN) fails
            return _fail(
                f"{broken}\nERROR: failed to solve: process did not complete successfully", 1
            )
        if not (_state() / "dockerhub_login").exists():
            pulls = _docker_hub_images(dockerfile)
            left = int(os.environ.get("CAPSTAN_SANDBOX_DOCKERHUB_PULLS_LEFT", "1000000"))
            if len(pulls) > left:
                return _fail(_LIMITED.format(image=pulls[left]), 1)
            (_state() / "anonymous_pulls").write_text(str(len(pulls)))
        layer = _layer(context)
        digest = hashlib.sha256(layer).hexdigest()
        (_state() / "layers").mkdir(exist_ok=True)
        (_state() / "layers" / digest).write_bytes(layer)
        built[tag] = {"layer": digest, "dockerfile": dockerfile, "pushed": False}
        images.write_text(json.dumps(built))
        print(f"Successfully built {digest[:12]}\nSuccessfully tagged {tag}")
        return 0
    if args[:1] == ["push"] and len(args) == 2:
        if args[1] not in built:
            return _fail(f"An image does not exist locally with the tag: {args[1]}", 1)
        built[args[1]]["pushed"] = True
        images.write_text(json.dumps(built))
        print(f"{args[1].rpartition(':')[2]}: digest: sha256:{built[args[1]]['layer']}")
        return 0
    return _fail(f"docker: '{' '.join(args[:1])}' is not simulated in the sandbox", 1)


# -- aws, bash -------------------------------------------------------------------------------


def aws(args: list[str]) -> int:
    if args[:2] == ["ecr", "get-login-password"]:
        print("sandbox-ecr-password")
        return 0
    return _fail(f"aws: '{' '.join(args[:2])}' is not simulated in the sandbox", 255)


def _source_root(start: Path) -> Path:
    """The checked-out repository holding `start` (the nearest directory with `.git`), so a
    build in a subdirectory (a monorepo's `root_dir`) reads the repository's own file."""
    here = start.resolve()
    for directory in (here, *here.parents):
        if (directory / ".git").is_dir():
            return directory
    return here


def _declared_failure(declared: Path) -> str | None:
    """The error of a build the checked-out source declares broken, else None."""
    import json

    document = json.loads(declared.read_text()) if declared.exists() else {}
    if document.get("build") == "fail":
        return str(document.get("error") or "the build command exited with status 1")
    return None


def bash(args: list[str]) -> int:
    """The build command (`bash -c COMMAND`): the outcome the checked-out source declares."""
    from pathlib import Path

    broken = _declared_failure(_source_root(Path.cwd()) / SANDBOX_FILE)
    return 0 if broken is None else _fail(broken, 1)


TOOLS = {"git": git, "docker": docker, "aws": aws, "bash": bash}


def main() -> int:
    return TOOLS[os.path.basename(sys.argv[0])](sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
