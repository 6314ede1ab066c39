"""The sample repositories every sandbox git host starts with, and what their builds do (the
`capstan-sandbox.json` the sandbox's build runner reads)."""

from __future__ import annotations

from typing import Any

from capstan_sandbox.git_host.monorepo import MONOREPO_SAMPLE, monorepo_build_file
from capstan_sandbox.git_host.records import (
    BROKEN_BRANCH,
    SAMPLES_OWNER,
    SandboxRepository,
    commit_sha,
)


def sample_repositories() -> list[SandboxRepository]:
    """A web app, a worker, a static site, a web app on a distroless image (no shell, no curl)
    and a monorepo holding all three kinds (`monorepo.py`), each with `main`, `feature-x` and
    `broken-build` (whose builds fail)."""
    samples = [
        (701_000_001, "hello-web", True, "A small HTTP service: the web server sample."),
        (701_000_002, "hello-worker", True, "A background job loop: the worker sample."),
        (701_000_003, "hello-static", False, "A static site built with npm: the static sample."),
        (
            701_000_004,
            "hello-distroless",
            False,
            "A Go web server on a distroless image: no shell, no curl.",
        ),
        (
            701_000_005,
            MONOREPO_SAMPLE,
            False,
            "A monorepo: a web app, a worker and a static site, each in its own directory.",
        ),
    ]
    repositories = []
    for repo_id, name, private, description in samples:
        full_name = f"{SAMPLES_OWNER}/{name}"
        repositories.append(
            SandboxRepository(
                id=repo_id,
                owner=SAMPLES_OWNER,
                name=name,
                private=private,
                default_branch="main",
                description=description,
                branches={
                    branch: commit_sha(full_name, branch, 1)
                    for branch in ("main", "feature-x", BROKEN_BRANCH)
                },
            )
        )
    return repositories


# The static site sample: what its build leaves in `dist` (the sandbox's build runner writes these
# files to the site's bucket). `${NAME}` is the value of a build-time variable, as a bundler
# inlines `PUBLIC_*` variables; a variable the build did not get stays as written.
SITE_SAMPLE = "hello-static"
# The image sample with nothing but its program: what the sandbox's images model (no shell, no
# curl), so a deployment assuming either fails here as it would on ECS.
DISTROLESS_SAMPLE = "hello-distroless"
DISTROLESS_FILES = {
    "Dockerfile": (
        "FROM golang:1.23 AS build\nWORKDIR /src\nCOPY . .\n"
        "RUN CGO_ENABLED=0 go build -o /server .\n"
        "FROM gcr.io/distroless/static-debian12\nCOPY --from=build /server /server\n"
        'EXPOSE 8080\nENTRYPOINT ["/server"]\n'
    ),
    "go.mod": "module hello\n\ngo 1.23\n",
    "main.go": (
        'package main\n\nimport "net/http"\n\nfunc main() {\n'
        '\thttp.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {\n'
        '\t\tw.Write([]byte("hello from distroless\\n"))\n\t})\n'
        '\thttp.ListenAndServe(":8080", nil)\n}\n'
    ),
}
SITE_PUBLISH_DIR = "dist"
# What every repository holds besides what it declares: the file the build runner reads, and the
# default app the build tools' checkout writes without `image_files` (`build_tools`; not
# imported: the git host does not load the cloud simulator).
BUILD_FILE = "capstan-sandbox.json"
DEFAULT_APP_FILES = ("Dockerfile", "app.py")


def build_file(repository: SandboxRepository, branch: str) -> dict[str, Any]:
    """The `capstan-sandbox.json` of a sample at `branch` (not `broken-build`): how its build
    goes; the static site sample also declares its publish directory and files."""
    if repository.owner == SAMPLES_OWNER and repository.name == MONOREPO_SAMPLE:
        return monorepo_build_file(branch)
    if repository.owner == SAMPLES_OWNER and repository.name == DISTROLESS_SAMPLE:
        return {"build": "succeed", "image_files": DISTROLESS_FILES}
    if repository.owner != SAMPLES_OWNER or repository.name != SITE_SAMPLE:
        return {"build": "succeed"}
    page = (
        '<!doctype html>\n<html><head><meta charset="utf-8"><title>{title}</title>'
        '<link rel="stylesheet" href="/assets/site.css"></head>\n'
        "<body><h1>{title}</h1>\n<p>{body}</p>\n"
        "<p>Built from ${{SOURCE_REPO}}@${{SOURCE_COMMIT}}, branch {branch}.</p>\n"
        '<p id="greeting">${{PUBLIC_GREETING}}</p></body></html>\n'
    )
    return {
        "build": "succeed",
        "build_command": "npm ci && npm run build",
        "publish_dir": SITE_PUBLISH_DIR,
        "files": {
            "index.html": page.format(
                title="hello-static", body="A static site served by CloudFront.", branch=branch
            ),
            "about/index.html": page.format(
                title="About", body="Built by CodeBuild, stored in S3.", branch=branch
            ),
            "assets/site.css": "body { font-family: system-ui, sans-serif; margin: 3rem; }\n",
        },
    }


def repository_files(repository: SandboxRepository, branch: str) -> list[str]:
    """Every file of the repository at `branch`: its `capstan-sandbox.json` and the files the
    build's checkout writes (`image_files`, else the default app's)."""
    declared = build_file(repository, branch).get("image_files") or DEFAULT_APP_FILES
    return sorted({BUILD_FILE, *declared})
