"""What every route of the sandbox git host shares: its one host per app, GitHub's error shape
and refusals (no User-Agent, an injected failure, a bad app JWT), and GitHub's pagination."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Annotated, TypeVar

from fastapi import Depends, Header, Request
from fastapi.responses import JSONResponse

from capstan_sandbox.git_host.host import DOCS, CredentialsRefused, SandboxGitHost

PREFIX = "/sandbox/git_host"

ACCOUNT_LOGIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,37}[A-Za-z0-9])?$")
ACCOUNT_TYPES = ("User", "Organization")
DEFAULT_PAGE_SIZE = 30
MAX_PAGE_SIZE = 100
T = TypeVar("T")


async def git_host_of(request: Request) -> SandboxGitHost:
    """The app's one sandbox git host: `app.state.sandbox_git_host`, or made on first use by
    `app.state.make_sandbox_git_host()`, which whoever mounts the router provides (in the event
    loop: a plain `def` would be a trip to the thread pool for every request)."""
    state = request.app.state
    host: SandboxGitHost | None = getattr(state, "sandbox_git_host", None)
    if host is None:  # no await between the look and the store: one host per app
        make: Callable[[], SandboxGitHost] = state.make_sandbox_git_host
        host = make()
        state.sandbox_git_host = host
    return host


Host = Annotated[SandboxGitHost, Depends(git_host_of)]
Authorization = Annotated[str | None, Header()]
UserAgent = Annotated[str | None, Header()]


def github_error(status_code: int, message: str) -> JSONResponse:
    return JSONResponse(
        {"message": message, "documentation_url": DOCS, "status": str(status_code)},
        status_code=status_code,
    )


def refused_up_front(
    host: SandboxGitHost, request: Request, user_agent: str | None
) -> JSONResponse | None:
    """What GitHub's API answers before looking at a request: no User-Agent, or an injected
    failure."""
    if not user_agent:
        return github_error(
            403,
            "Request forbidden by administrative rules. Please make sure your request has a "
            "User-Agent header.",
        )
    return injected_failure(host, request)


def injected_failure(host: SandboxGitHost, request: Request) -> JSONResponse | None:
    failure = host.store.take_failure(request.url.path.removeprefix(PREFIX))
    if failure is None:
        return None
    if failure.delay_seconds:
        time.sleep(failure.delay_seconds)  # a thread-pool thread: only this request waits
    if failure.status is None:
        return None
    response = github_error(failure.status, "Failure injected by the sandbox git host.")
    if failure.retry_after is not None:
        response.headers["Retry-After"] = str(failure.retry_after)
    return response


def parse_installation_id(text: str) -> int | None:
    return int(text) if text.isdigit() and len(text) < 19 else None


def app_call(
    host: SandboxGitHost, request: Request, authorization: str | None, user_agent: str | None
) -> JSONResponse | None:
    """None when an app-JWT call may go ahead; otherwise GitHub's refusal."""
    if (failure := refused_up_front(host, request, user_agent)) is not None:
        return failure
    try:
        host.check_app_jwt(authorization)
    except CredentialsRefused as refused:
        return github_error(401, str(refused))
    return None


def page_of(
    request: Request, items: list[T], per_page: str | None, page: str | None
) -> tuple[list[T], dict[str, str] | None]:
    """One page of `items` and its `Link` header (prev/first/next/last), as GitHub paginates."""
    size = min(positive(per_page, DEFAULT_PAGE_SIZE), MAX_PAGE_SIZE)
    number = positive(page, 1)
    last = max(1, -(-len(items) // size))
    links = []

    def link(to: int, rel: str) -> str:
        url = request.url.include_query_params(per_page=size, page=to)
        return f'<{url}>; rel="{rel}"'

    if number > 1:
        links += [link(min(number - 1, last), "prev"), link(1, "first")]
    if number < last:
        links += [link(number + 1, "next"), link(last, "last")]
    headers = {"Link": ", ".join(links)} if links else None
    return items[(number - 1) * size : number * size], headers


def positive(text: str | None, default: int) -> int:
    if text is None or not text.isdigit() or int(text) < 1:
        return default
    return min(int(text), 1_000_000)
