"""The sandbox git host's store, directly: who administers what, codes, user tokens, and the
state file across versions."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from capstan_sandbox.git_host.store import (
    STATE_FILE,
    InjectedFailure,
    SandboxStore,
)


def test_installations_of_a_user(tmp_path: Path) -> None:
    store = SandboxStore(tmp_path / STATE_FILE)
    own = store.create_installation("Alice", "User", installed_by="alice")
    org = store.create_installation("acme", "Organization", installed_by="alice")
    other = store.create_installation("acme", "Organization", installed_by="bob")
    bobs = store.create_installation("bob", "User", installed_by="bob")
    store.create_installation("globex", "Organization", installed_by="carol")
    assert [i.id for i in store.installations_of_user("alice")] == [own.id, org.id, other.id]
    assert [i.id for i in store.installations_of_user("BOB")] == [org.id, other.id, bobs.id]
    assert store.installations_of_user("mallory") == []


def test_codes_are_single_use_bound_to_a_client_and_expire(tmp_path: Path) -> None:
    store = SandboxStore(tmp_path / STATE_FILE)
    code = store.issue_code("alice", "Iv1.app")
    assert store.redeem_code(code, "Iv1.app") == "alice"
    assert store.redeem_code(code, "Iv1.app") is None
    other_client = store.issue_code("alice", "Iv1.app")
    assert store.redeem_code(other_client, "Iv1.other") is None
    assert store.redeem_code(other_client, "Iv1.app") is None  # spent by the failed try
    stale = store.issue_code("alice", "Iv1.app", now=datetime.now(UTC) - timedelta(minutes=10))
    assert store.redeem_code(stale, "Iv1.app") is None


def test_user_tokens_live_in_memory_only(tmp_path: Path) -> None:
    path = tmp_path / STATE_FILE
    store = SandboxStore(path)
    store.create_installation("alice", "User", installed_by="alice")
    code = store.issue_code("alice", "Iv1.app")
    token = store.issue_user_token("alice", "Iv1.app")
    issued = store.user_token(token)
    assert issued is not None and issued.user_login == "alice"
    assert store.user_token(token + "x") is None
    assert token not in path.read_text() and code not in path.read_text()
    document = json.loads(path.read_text())
    assert document["installations"][0]["installed_by"] == "alice"
    reloaded = SandboxStore(path)
    assert reloaded.user_token(token) is None
    assert reloaded.redeem_code(code, "Iv1.app") is None
    assert [i.installed_by for i in reloaded.installations_of_user("alice")] == ["alice"]


def test_a_state_file_from_before_installers_were_recorded(tmp_path: Path) -> None:
    path = tmp_path / STATE_FILE
    SandboxStore(path)  # writes the samples
    document = json.loads(path.read_text())
    created = datetime(2024, 5, 1, tzinfo=UTC).isoformat()
    document["installations"] = [
        {
            "id": 7,
            "account_login": "alice",
            "account_type": "User",
            "account_id": 1,
            "created_at": created,
        },
        {
            "id": 8,
            "account_login": "acme",
            "account_type": "Organization",
            "account_id": 2,
            "created_at": created,
        },
    ]
    path.write_text(json.dumps(document))
    store = SandboxStore(path)
    assert [i.id for i in store.installations_of_user("alice")] == [7]
    assert [i.id for i in store.installations_of_user("sandbox-user")] == [8]


def test_failures_aimed_at_a_path(tmp_path: Path) -> None:
    store = SandboxStore(tmp_path / STATE_FILE)
    aimed = InjectedFailure(status=503, path="/api/app/installations")
    anywhere = InjectedFailure(status=500)
    store.fail_next(aimed, 1)
    store.fail_next(anywhere, 1)
    assert store.take_failure("/api/user/installations") == anywhere
    assert store.take_failure("/api/user/installations") is None
    assert store.take_failure("/api/app/installations/7") == aimed
    assert store.take_failure("/api/app/installations/7") is None


def test_pushes_branches_and_suspensions_survive_a_restart(tmp_path: Path) -> None:
    path = tmp_path / STATE_FILE
    store = SandboxStore(path)
    reader = store.create_installation("acme", "Organization")
    outsider = store.create_installation("globex", "Organization")
    store.create_repository("acme", "shop", private=True, installation_ids=[reader.id])
    first = store.push("acme", "shop", "topic")
    assert first is not None and first.created and first.before == "0" * 40
    broken = store.push("acme", "shop", "topic", breaks_build=True)
    assert broken is not None and not broken.created and broken.before == first.after
    later = store.push("acme", "shop", "topic")  # made on a broken commit: still broken
    assert later is not None
    store.set_suspended(outsider.id, True)

    reloaded = SandboxStore(path)
    shop = reloaded.repository("acme", "shop")
    assert shop is not None
    assert shop.visible_to(reader.id) and not shop.visible_to(outsider.id)
    assert not shop.breaks_build(first.after)
    assert shop.breaks_build(broken.after) and shop.breaks_build("topic")
    assert [i.id for i in reloaded.installations_covering(shop)] == [reader.id]
    sample = reloaded.repository("capstan-samples", "hello-web")
    assert sample is not None  # every installation reads it; a suspended one hears nothing
    assert [i.id for i in reloaded.installations_covering(sample)] == [reader.id]
    suspended = reloaded.installation(outsider.id)
    assert suspended is not None and suspended.suspended_at is not None
    _, deleted_at = reloaded.delete_branch("acme", "shop", "topic")
    assert deleted_at == later.after
    gone = reloaded.repository("acme", "shop")
    assert gone is not None and "topic" not in gone.branches
    assert gone.branch_of(later.after) == "topic"  # its commits still build
