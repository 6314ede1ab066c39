"""Control endpoints (not GitHub's API): inject failures, and what people do to repositories
(create one, push, delete a branch, close a pull request), each delivering its webhooks."""

from __future__ import annotations

import functools
import itertools
import re
from typing import Annotated

from fastapi import APIRouter, status
from fastapi.responses import JSONResponse, Response
from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from capstan_sandbox.git_host import webhooks
from capstan_sandbox.git_host.deliveries import delivered
from capstan_sandbox.git_host.http import (
    ACCOUNT_LOGIN,
    Host,
    github_error,
)
from capstan_sandbox.git_host.store import (
    NO_COMMIT,
    SAMPLES_OWNER,
    InjectedFailure,
    Pushed,
    RepositoryError,
)

router = APIRouter(include_in_schema=False)  # GitHub's API, not Capstan's


class StrictBody(BaseModel):
    """A control request's body: unknown fields are refused, strings are not coerced."""

    model_config = ConfigDict(extra="forbid", strict=True)


# Control (not part of GitHub) ------------------------------------------------------------------


class FailureRequest(StrictBody):
    # None: answer normally (after `delay_seconds`).
    status: int | None = Field(default=None, ge=400, le=599)
    count: int = Field(default=1, ge=1, le=100)
    retry_after: int | None = Field(default=None, ge=0, le=3600)
    delay_seconds: float = Field(default=0.0, ge=0, le=30)
    # Only calls whose path under /sandbox/git_host starts with this, e.g. "/api/app/".
    path: str | None = Field(default=None, pattern=r"^/", max_length=200)


@router.post("/control/failures", status_code=status.HTTP_204_NO_CONTENT)
def inject_failures(body: FailureRequest, host: Host) -> Response:
    """The next `count` calls to `/api/...` or the OAuth endpoint (those under `path`, when
    given) answer late and/or fail, as GitHub sometimes does."""
    failure = InjectedFailure(
        status=body.status,
        retry_after=body.retry_after,
        delay_seconds=body.delay_seconds,
        path=body.path,
    )
    host.store.fail_next(failure, body.count)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


# Control: what people do to repositories (not GitHub's API) ------------------------------------

# A branch name git accepts: no spaces or control characters, none of `~^:?*[\`, no `..`, `//`
# or `@{`, no leading `-` or `/`, no trailing `/`, `.` or `.lock`.
_BRANCH_CHARACTERS = re.compile(r"^[^\s~^:?*\[\\\x00-\x1f\x7f]+$")


def _git_branch(name: str) -> str:
    if (
        not _BRANCH_CHARACTERS.match(name)
        or any(part in name for part in ("..", "//", "@{"))
        or name.startswith(("-", "/"))
        or name.endswith(("/", ".", ".lock"))
    ):
        raise ValueError("not a branch name git accepts")
    return name


_REPOSITORY_NAME = re.compile(r"^[A-Za-z0-9._-]{1,100}$")
_pull_numbers = itertools.count(1)
Branch = Annotated[str, Field(min_length=1, max_length=255), AfterValidator(_git_branch)]


class RepositoryCreate(StrictBody):
    name: str = Field(pattern=_REPOSITORY_NAME.pattern)
    owner: str = Field(default=SAMPLES_OWNER, pattern=ACCOUNT_LOGIN.pattern)
    private: bool = True
    default_branch: Branch = "main"
    # GitHub's "Only select repositories": these installations may read it. None: all of them.
    installation_ids: list[int] | None = Field(default=None, max_length=100)


ChangedPath = Annotated[
    str, Field(min_length=1, max_length=4096, pattern=r"^[^\x00-\x1f/][^\x00-\x1f]*$")
]


class PushBody(StrictBody):
    branch: Branch
    # Git keeps no NUL in a commit message.
    message: str = Field(
        default="A change pushed to the sandbox", max_length=1000, pattern=r"^[^\x00]*$"
    )
    # Whether the commit breaks the build; by default it keeps what it was made on.
    breaks_build: bool | None = None
    # A force-push: no new commit; the branch is reset to this commit of the repository.
    force_to: str | None = Field(default=None, pattern=r"^[0-9a-f]{40}$")
    # The paths the commit changes (relative to the repository's root), as the webhook's
    # `commits[].modified` lists them; None: every file of the repository.
    files: list[ChangedPath] | None = Field(default=None, max_length=3000)


class PullRequestClose(StrictBody):
    head: Branch
    base: Branch | None = None  # default: the repository's default branch
    merged: bool = False


@router.post("/repos", status_code=status.HTTP_201_CREATED)
async def create_repository(body: RepositoryCreate, host: Host) -> Response:
    """A new repository with a `main` branch; it behaves as the samples do when built."""
    try:
        repository = await run_in_threadpool(
            functools.partial(
                host.store.create_repository,
                body.owner,
                body.name,
                private=body.private,
                installation_ids=body.installation_ids,
                default_branch=body.default_branch,
            )
        )
    except RepositoryError as error:
        return github_error(422, f"Repository creation failed: {error}")
    return JSONResponse(
        {**host.repository_json(repository), "branches": repository.branches},
        status_code=status.HTTP_201_CREATED,
    )


@router.post("/repos/{owner}/{repo}/push", status_code=status.HTTP_201_CREATED)
async def push(owner: str, repo: str, body: PushBody, host: Host) -> Response:
    """A new commit on `branch` (created from the default branch when missing), or with
    `force_to` the branch forced back (or on) to a commit the repository has, then the signed
    `push` webhook to every installation that can read the repository."""
    try:
        pushed = await run_in_threadpool(
            functools.partial(
                host.store.push,
                owner,
                repo,
                body.branch,
                breaks_build=body.breaks_build,
                force_to=body.force_to,
                message=body.message,
            )
        )
    except RepositoryError as error:
        return github_error(422, str(error))
    if pushed is None:
        return github_error(404, "Not Found")
    installations = host.store.installations_covering(pushed.repository)
    deliveries = await webhooks.deliver(
        host,
        "push",
        webhooks.push_payloads(host, pushed, installations, message=body.message, files=body.files),
    )
    return JSONResponse(
        {
            "sha": pushed.after,
            "ref": f"refs/heads/{pushed.branch}",
            "before": pushed.before,
            "created": pushed.created,
            "forced": pushed.forced,
            "deliveries": [delivered(d) for d in deliveries],
        },
        status_code=status.HTTP_201_CREATED,
    )


@router.delete("/repos/{owner}/{repo}/branches/{branch:path}")
async def delete_branch(owner: str, repo: str, branch: str, host: Host) -> Response:
    """Delete a branch, then deliver `delete` and a `push` with `deleted: true`, as GitHub
    does."""
    try:
        repository, sha = await run_in_threadpool(host.store.delete_branch, owner, repo, branch)
    except KeyError:
        return github_error(404, "Branch not found")
    except RepositoryError as error:
        return github_error(422, str(error))
    installations = host.store.installations_covering(repository)
    await webhooks.deliver(
        host, "delete", webhooks.delete_payloads(host, repository, branch, installations)
    )
    gone = Pushed(repository, branch, before=sha, after=NO_COMMIT, created=False)
    await webhooks.deliver(
        host, "push", webhooks.push_payloads(host, gone, installations, message="", deleted=True)
    )
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/repos/{owner}/{repo}/pulls/close")
async def close_pull_request(owner: str, repo: str, body: PullRequestClose, host: Host) -> Response:
    """Close a pull request from `head` (merging it into `base` first when `merged`), then
    deliver the `push` of the merge commit (when merged) and `pull_request` `closed`."""
    repository = host.store.repository(owner, repo)
    if repository is None:
        return github_error(404, "Not Found")
    base = body.base or repository.default_branch
    if body.head not in repository.branches or base not in repository.branches:
        return github_error(422, "Validation Failed: head and base must be branches")
    merge_commit = None
    if body.merged:
        merged = await run_in_threadpool(host.store.push, owner, repo, base)
        assert merged is not None
        merge_commit = merged.after
        repository = merged.repository
        installations = host.store.installations_covering(repository)
        await webhooks.deliver(
            host,
            "push",
            webhooks.push_payloads(
                host, merged, installations, message=f"Merge branch '{body.head}' into {base}"
            ),
        )
    installations = host.store.installations_covering(repository)
    number = next(_pull_numbers)
    deliveries = await webhooks.deliver(
        host,
        "pull_request",
        webhooks.pull_request_closed_payloads(
            host,
            repository,
            installations,
            number=number,
            head=body.head,
            base=base,
            merge_commit=merge_commit,
        ),
    )
    return JSONResponse(
        {
            "number": number,
            "merged": body.merged,
            "merge_commit_sha": merge_commit,
            "deliveries": [delivered(d) for d in deliveries],
        }
    )
