"""`capstan projects delete`: refused (the API's sentence) while the project holds resources;
with --with-resources it lists each one with its monthly cost, asks, and the project goes with
them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from capstan_sandbox.cloud.simulator import simulator
from tests.apps.helpers import new_shop
from tests.cli.helpers import Cli
from tests.harness import Org
from tests.polling import wait_until


@pytest.fixture(autouse=True)
def quick_caches() -> Iterator[None]:
    before = simulator().configure(cache_seconds=0.3)
    yield
    simulator().configure(cache_seconds=before.cache_seconds)


def test_projects_delete_with_resources_lists_asks_and_deletes(
    connected: Org, tmp_path: Path
) -> None:
    shop = new_shop(connected, name="Leaving", stem="leaving")
    suffix = shop.project["hostname_suffix"]
    made = connected.api.post(f"{shop.base}/cache", json={"storage_limit_mb": 256, "name": "kv"})
    assert made.status_code == 201, made.text
    terminal = Cli(tmp_path / "config", url=connected.server.base_url, token=connected.token)

    (row,) = [line for line in terminal.run("projects").stdout.splitlines() if suffix in line]
    assert "active" in row.split()
    refused = terminal.run("projects", "delete", suffix, "--yes")
    assert refused.exit_code == 1
    assert "still has resources (caches: 1)" in refused.stderr
    assert "--json needs --yes" in terminal.run("projects", "delete", suffix, "--json").stderr
    kept = terminal.run("projects", "delete", suffix, "--with-resources", input="n\n")
    assert kept.exit_code == 1 and "Nothing deleted." in kept.stderr
    assert connected.api.get(shop.base).json()["status"] == "active"

    deleted = terminal.run("projects", "delete", suffix, "--with-resources", input="y\n")
    assert deleted.exit_code == 0, deleted.output
    (row,) = [line for line in deleted.stdout.splitlines() if line.startswith("cache ")]
    assert row.split()[1] == "kv" and float(row.split()[2]) > 0
    assert "Deleting project Leaving" in deleted.stdout
    wait_until(
        lambda: connected.api.get(shop.base).status_code == 404, timeout=60, what="the project"
    )
    again = terminal.run("projects", "delete", suffix, "--yes", "--json")
    assert again.exit_code == 1 and "No project" in again.stderr
    listed = json.loads(terminal.run("projects", "--json").stdout)
    assert shop.project["id"] not in [project["id"] for project in listed]
