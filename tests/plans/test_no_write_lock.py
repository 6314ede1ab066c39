"""A plan computes; it writes nothing and holds no lock another request waits on. While a plan
waits on the git host (here, on a gate the test opens), another organization creates a token
and the plan's own project changes the very service the plan would change — both answered at
once, on SQLite (one write lock for the whole database) and on PostgreSQL (row locks). The plan
then answers, having sent the database no statement that writes."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.apps.helpers import WEB_REPO, new_shop
from tests.harness import Org, RunningServer

SERVICE = {"repo": WEB_REPO, "branch": "main", "cpu": 256, "memory": 512}
# A request that waited on a lock the plan held would not be answered until the gate opens,
# which the test does only after it: this bounds how long such a request is waited for.
BLOCKED_SECONDS = 20


class GatedGitHost:
    """The server's git host, whose `repository` answers only once `opened` is set."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.asked = threading.Event()
        self.opened = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    async def repository(self, installation_id: int, full_name: str) -> Any:
        self.asked.set()
        await asyncio.to_thread(self.opened.wait, 120)
        return await self.real.repository(installation_id, full_name)


@contextmanager
def gated(server: RunningServer) -> Iterator[GatedGitHost]:
    gate = GatedGitHost(server.app.state.git_host)
    server.app.state.git_host = gate
    try:
        yield gate
    finally:
        gate.opened.set()
        server.app.state.git_host = gate.real


@contextmanager
def writes_naming(server: RunningServer, marker: str) -> Iterator[list[str]]:
    """The statements the server sends meanwhile that are not reads and carry `marker`."""
    engine: AsyncEngine = server.app.state.sessionmaker.kw["bind"]
    seen: list[str] = []

    def look(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if not statement.lstrip().upper().startswith("SELECT") and marker in str(parameters):
            seen.append(statement)

    event.listen(engine.sync_engine, "before_cursor_execute", look)
    try:
        yield seen
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", look)


def test_a_plan_waiting_on_the_git_host_holds_no_lock_and_writes_nothing(
    connected: Org, other_org: Org
) -> None:
    shop = new_shop(connected)
    applied = shop.org.api.post(f"{shop.base}/apply", json={"web_servers": {"api": SERVICE}})
    assert applied.status_code == 200, applied.text
    [api] = shop.org.api.get(f"{shop.base}/web_servers").json()["web_servers"]
    marker = connected.server.unique("gated")
    # The change to `api` comes before the new service's look-up in apply's order: a plan that
    # wrote would hold that row (and, on SQLite, the database) while it waits.
    document = {"web_servers": {"api": {**SERVICE, "cpu": 512, "memory": 1024}, marker: SERVICE}}
    server = connected.server
    with (
        gated(server) as gate,
        writes_naming(server, marker) as writes,
        ThreadPoolExecutor(1) as pool,
    ):
        planning = pool.submit(shop.org.api.post, f"{shop.base}/plan", json=document)
        assert gate.asked.wait(60), planning.result() if planning.done() else "not asked"
        token = other_org.api.post(
            "/api/api_tokens", json={"name": "meanwhile"}, timeout=BLOCKED_SECONDS
        )
        patched = shop.org.api.patch(
            f"{shop.base}/web_servers/{api['id']}",
            json={"auto_deploy": True},
            timeout=BLOCKED_SECONDS,
        )
        assert not planning.done()  # both were answered while the plan still waited
        gate.opened.set()
        planned = planning.result(timeout=120)
    assert token.status_code == 201, token.text
    assert patched.status_code == 200, patched.text
    assert planned.status_code == 200, planned.text
    assert {(c["action"], c["name"]) for c in planned.json()["changes"]} == {
        ("update", "api"),
        ("create", marker),
    }
    assert writes == []
    [still] = shop.org.api.get(f"{shop.base}/web_servers").json()["web_servers"]
    assert (still["id"], still["cpu"], still["auto_deploy"]) == (api["id"], 256, True)
