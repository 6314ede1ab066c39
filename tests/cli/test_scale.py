"""`capstan scale` against a live server: in place (no deployment), read back through the API;
a static website or no option is refused in a sentence."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.apps.helpers import Ready, new_shop, ready
from tests.cli.helpers import Cli
from tests.harness import Org, RunningServer


@pytest.fixture(scope="module")
def member(server: RunningServer) -> Iterator[Org]:
    org = server.new_org()
    ready(org)
    yield org
    org.close()


@pytest.fixture
def cli(member: Org, tmp_path: Path) -> tuple[Cli, Ready]:
    shop = new_shop(member)
    terminal = Cli(tmp_path / "config", url=member.server.base_url, token=member.token)
    assert terminal.run("use", shop.project["hostname_suffix"]).exit_code == 0
    return terminal, shop


def test_scale_changes_a_web_server_in_place(cli: tuple[Cli, Ready]) -> None:
    terminal, shop = cli
    web = shop.create_web_server(name="api")
    path = f"{shop.base}/web_servers/{web['id']}"
    shop.wait_for(path, "running")
    done = terminal.run("scale", "api", "--min", "2", "--max", "6", "--target-cpu", "50")
    assert done.exit_code == 0, done.output
    assert "2 to 6 tasks at 50 % CPU" in done.output
    assert shop.org.api.get(path).json()["scaling"] == {
        "min_instances": 2,
        "max_instances": 6,
        "target_cpu_percent": 50,
        "target_requests_per_instance": None,
    }
    as_json = terminal.run("scale", "api", "--requests-per-instance", "900", "--json")
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.output)["scaling"]["target_requests_per_instance"] == 900
    assert len(shop.org.api.get(f"{path}/deployments").json()["deployments"]) == 1

    refused = terminal.run("scale", "api", "--min", "7", "--max", "6")
    assert refused.exit_code != 0
    assert "min_instances" in refused.output
    nothing = terminal.run("scale", "api")
    assert nothing.exit_code != 0 and "--min" in nothing.output
