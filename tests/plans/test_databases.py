"""Databases in capstan.yaml, through the HTTP API against the sandbox (and `capstan plan` and
`init` in-process): apply creates a database and resolves a web server's `{database: NAME}` to
the API's `value_from` reference; plan then shows no changes; a storage growth is priced as the
cost endpoint prices it and applied; a shrink or an unknown version is refused by field with
nothing applied; a reference to no database is refused; prune deletes with a final snapshot."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.databases.models import Database
from capstan_sandbox.cloud.simulator import simulator
from tests.apps.helpers import WEB_REPO, Ready, new_shop
from tests.cli.helpers import Cli
from tests.harness import Org, run_db

FILE: dict[str, Any] = {
    "databases": {"main": {"storage_gb": 20}},
    "web_servers": {
        "api": {
            "repo": WEB_REPO,
            "branch": "main",
            "cpu": 256,
            "memory": 512,
            "environment": {"LOG_LEVEL": "info", "DATABASE_URL": {"database": "main"}},
        }
    },
}


@pytest.fixture(scope="module", autouse=True)
def quick_databases() -> Iterator[None]:
    """RDS takes minutes to create, modify or delete an instance; here 0.3 s."""
    before = simulator().configure(database_seconds=0.3)
    yield
    simulator().configure(database_seconds=before.database_seconds)


def post(shop: Ready, what: str, body: dict[str, Any], **params: Any) -> dict[str, Any]:
    response = shop.org.api.post(f"{shop.base}/{what}", json=body, params=params)
    assert response.status_code == 200, response.text
    return dict(response.json())


def refused(shop: Ready, what: str, body: dict[str, Any]) -> dict[str, Any]:
    response = shop.org.api.post(f"{shop.base}/{what}", json=body)
    assert response.status_code == 400, response.text
    return dict(response.json())


def databases_of(shop: Ready) -> list[dict[str, Any]]:
    return list(shop.org.api.get(f"{shop.base}/databases").json()["databases"])


def estimate(shop: Ready, database_id: str) -> float:
    cost = shop.org.api.get(f"{shop.base}/databases/{database_id}/cost")
    assert cost.status_code == 200, cost.text
    return float(cost.json()["estimated_monthly_usd"])


@pytest.fixture(scope="module")
def applied(connected: Org) -> tuple[Ready, dict[str, Any]]:
    """One project made from `FILE`, for the tests that only look at it."""
    shop = new_shop(connected)
    return shop, post(shop, "apply", FILE)


def test_apply_creates_the_database_and_the_reference_to_it(
    applied: tuple[Ready, dict[str, Any]],
) -> None:
    shop, result = applied
    assert {(c["action"], c["kind"], c["name"]) for c in result["changes"]} == {
        ("create", "database", "main"),
        ("create", "web_server", "api"),
    }
    [database] = databases_of(shop)
    assert (database["name"], database["storage_gb"], database["engine"]) == (
        "main",
        20,
        "postgres",
    )
    # The API's defaults for what the file leaves out.
    assert (database["database_name"], database["backup_retention_days"]) == ("app", 7)
    [web] = shop.org.api.get(f"{shop.base}/web_servers").json()["web_servers"]
    environment = shop.org.api.get(f"{shop.base}/web_servers/{web['id']}/environment").json()
    assert environment["environment"] == [
        {"name": "LOG_LEVEL", "value": "info"},
        {"name": "DATABASE_URL", "value_from": {"database": database["id"]}},
    ]
    [created] = [c for c in result["changes"] if c["kind"] == "database"]
    assert created["monthly_usd_after"] == estimate(shop, database["id"]) > 0
    [web_change] = [c for c in result["changes"] if c["kind"] == "web_server"]
    assert {"field": "environment.DATABASE_URL", "before": None, "after": "(database main)"} in (
        web_change["fields"]
    )


def test_an_applied_file_plans_no_changes(applied: tuple[Ready, dict[str, Any]]) -> None:
    shop, _result = applied
    planned = post(shop, "plan", FILE)
    assert planned["no_changes"] is True, planned["changes"]
    again = post(shop, "apply", FILE)
    assert again["applied"] is False
    [database] = databases_of(shop)
    assert planned["monthly_run_rate_usd"]["before"] >= estimate(shop, database["id"])


def test_a_reference_to_no_database_is_refused_by_field(
    applied: tuple[Ready, dict[str, Any]],
) -> None:
    shop, _result = applied
    body = copy.deepcopy(FILE)
    body["web_servers"]["api"]["environment"]["DATABASE_URL"] = {"database": "nope"}
    for what in ("plan", "apply"):
        error = refused(shop, what, body)
        assert error["error"] == "unknown_database"
        assert [d["field"] for d in error["details"]] == [
            "web_servers.api.environment.DATABASE_URL"
        ]
    # A database the project has but the file does not name resolves too (left alone).
    del body["databases"]
    body["web_servers"]["api"]["environment"]["DATABASE_URL"] = {"database": "main"}
    planned = post(shop, "plan", body)
    assert planned["no_changes"] is True
    assert [(k["kind"], k["name"]) for k in planned["left_alone"]] == [("database", "main")]
    # ... but not one that prune would delete.
    pruning = shop.org.api.post(f"{shop.base}/plan", json=body, params={"prune": "true"})
    assert pruning.status_code == 400, pruning.text
    assert pruning.json()["error"] == "unknown_database"


def test_a_databases_fixed_fields_cannot_change(applied: tuple[Ready, dict[str, Any]]) -> None:
    shop, _result = applied
    body = copy.deepcopy(FILE)
    body["databases"]["main"]["username"] = "other"
    error = refused(shop, "plan", body)
    assert error["error"] == "database_field_immutable"
    assert [d["field"] for d in error["details"]] == ["databases.main.username"]


def test_an_unknown_engine_version_is_refused_by_field(connected: Org) -> None:
    shop = new_shop(connected)
    error = refused(shop, "plan", {"databases": {"main": {"engine_version": "9.6"}}})
    assert error["error"] == "unsupported_engine_version"
    assert [d["field"] for d in error["details"]] == ["databases.main.engine_version"]
    assert databases_of(shop) == []


def test_storage_grows_at_the_cost_endpoints_price_and_never_shrinks(connected: Org) -> None:
    shop = new_shop(connected)
    post(shop, "apply", {"databases": {"main": {"storage_gb": 20}}})
    [database] = databases_of(shop)
    before = estimate(shop, database["id"])

    larger = {"databases": {"main": {"storage_gb": 50}}}
    planned = post(shop, "plan", larger)
    [change] = planned["changes"]
    assert (change["action"], change["kind"], change["fields"]) == (
        "update",
        "database",
        [{"field": "storage_gb", "before": 20, "after": 50}],
    )
    assert change["monthly_usd_before"] == before == planned["monthly_run_rate_usd"]["before"]
    assert databases_of(shop)[0]["storage_gb"] == 20  # a plan writes nothing

    post(shop, "apply", larger)
    [grown] = databases_of(shop)
    assert grown["storage_gb"] == 50
    assert change["monthly_usd_after"] == estimate(shop, database["id"]) > before
    assert planned["monthly_run_rate_usd"]["delta"] == round(
        change["monthly_usd_after"] - before, 2
    )

    # A shrink is the databases service's refusal, by field; the cache beside it is not made.
    smaller = {
        "databases": {"main": {"storage_gb": 30}},
        "caches": {"c": {"storage_limit_mb": 128}},
    }
    for what in ("plan", "apply"):
        error = refused(shop, what, smaller)
        assert error["error"] == "database_storage_shrink_unsupported"
        assert [d["field"] for d in error["details"]] == ["databases.main.storage_gb"]
    assert databases_of(shop)[0]["storage_gb"] == 50
    assert shop.org.api.get(f"{shop.base}/cache").json()["caches"] == []


def test_prune_deletes_the_database_with_a_final_snapshot(connected: Org) -> None:
    shop = new_shop(connected)
    post(shop, "apply", {"databases": {"main": {}}})
    [database] = databases_of(shop)
    kept = post(shop, "apply", {})
    assert kept["applied"] is False
    assert [(k["kind"], k["name"]) for k in kept["left_alone"]] == [("database", "main")]

    pruning = post(shop, "plan", {}, prune="true")
    [change] = pruning["changes"]
    assert (change["action"], change["kind"]) == ("delete", "database")
    assert change["id"] == database["id"]
    assert pruning["monthly_run_rate_usd"]["delta"] == -change["monthly_usd_before"] < 0
    post(shop, "apply", {}, prune="true")
    assert all(d["status"] == "deleting" for d in databases_of(shop))

    async def snapshot_skipped(session: AsyncSession) -> bool | None:
        return await session.scalar(
            select(Database.skip_final_snapshot).where(Database.id == database["id"])
        )

    # The API's default: a final snapshot (the row may already be gone, its snapshot taken).
    assert run_db(shop.org.server.settings, snapshot_skipped) in (False, None)
    assert post(shop, "plan", {}, prune="true")["no_changes"] is True


def test_cli_plan_shows_the_database_and_init_writes_it_back(
    applied: tuple[Ready, dict[str, Any]], connected: Org, tmp_path: Path
) -> None:
    shop, _result = applied
    cli = Cli(tmp_path / "config", url=connected.server.base_url, token=connected.token)
    assert cli.run("use", shop.project["hostname_suffix"]).exit_code == 0

    path = tmp_path / "init.yaml"
    written = cli.run("init", "-f", str(path))
    assert written.exit_code == 0, written.output
    document = yaml.safe_load(path.read_text())
    assert document["databases"]["main"]["storage_gb"] == 20
    assert document["databases"]["main"]["engine"] == "postgres"
    assert document["web_servers"]["api"]["environment"]["DATABASE_URL"] == {"database": "main"}
    assert cli.json("plan", "-f", str(path))["no_changes"] is True

    document["databases"]["main"]["storage_gb"] = 40
    path.write_text(yaml.safe_dump(document))
    [database] = databases_of(shop)
    delta = cli.json("plan", "-f", str(path))["monthly_run_rate_usd"]
    human = cli.run("plan", "-f", str(path))
    assert human.exit_code == 0, human.output
    assert "~ update database main" in human.stdout
    assert "storage_gb: 20 -> 40" in human.stdout
    assert f"Monthly run-rate: ${delta['before']:.2f} -> ${delta['after']:.2f}" in human.stdout
    assert delta["after"] > delta["before"] >= estimate(shop, database["id"])
