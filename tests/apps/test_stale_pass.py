"""A reconcile pass that read its target before a change committed, and its newest deployment
after: it must build what the deployment asks for, not what the row said a moment before.

On PostgreSQL (READ COMMITTED) and on SQLite alike, each statement of a pass sees the latest
commits, so a PATCH that lands between the pass's read of the service and its read of the newest
deployment hands the pass the PATCH's deployment with the old row. The test holds a pass at exactly
that point (between `_load` and `_converge`) and sends the PATCH then."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from capstan.apps.reconcile import TargetReconciler
from capstan.apps.steps import Subject
from tests.apps.helpers import Ready, ready
from tests.apps.sites import account, deployments, running_site, served
from tests.harness import Org


@pytest.fixture
def shop(org: Org) -> Ready:
    return ready(org)


class HeldPass:
    """Holds the next pass of one service after it has read its rows, until released."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, resource_id: str) -> None:
        self.loaded = threading.Event()
        self.release = threading.Event()
        original = TargetReconciler._load
        held = self

        async def load(
            self: TargetReconciler, session: Any, rid: str
        ) -> tuple[Subject, Any] | None:
            loaded = await original(self, session, rid)
            if rid == resource_id and not held.loaded.is_set():
                held.loaded.set()
                # The loop goes on serving (the PATCH among it) while this pass waits.
                await asyncio.to_thread(held.release.wait, 60)
            return loaded

        monkeypatch.setattr(TargetReconciler, "_load", load)


def test_a_pass_holding_a_row_read_before_a_patch_builds_the_patched_branch(
    shop: Ready, monkeypatch: pytest.MonkeyPatch
) -> None:
    there = running_site(shop)
    api, path = shop.org.api, there.path
    held = HeldPass(monkeypatch, there.site["id"])
    redeploy = api.post(f"{path}/redeploy")
    assert redeploy.status_code == 202, redeploy.text
    assert held.loaded.wait(30), "the redeploy's pass never started"
    try:
        # The pass has read the service (branch main); now the branch changes under it.
        patched = api.patch(path, json={"branch": "feature-x"})
        assert patched.status_code == 200, patched.text
    finally:
        held.release.set()
    assert shop.wait_for(path, "running", timeout=60)["status"] == "running"
    history = deployments(shop, path)
    assert [(d["trigger"], d["status"]) for d in history][:2] == [
        ("patch", "running"),
        ("redeploy", "superseded"),
    ]
    with account(shop) as (customer, _operator):
        index = served(customer, there.site["id"], "index.html")
    assert "branch feature-x" in index, (index, [(d["id"], d["commit_sha"]) for d in history])
