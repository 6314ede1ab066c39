"""`capstan source`: shows and changes where a service builds from, through the API."""

from __future__ import annotations

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


@pytest.fixture(scope="module")
def shop(member: Org) -> Ready:
    shop = new_shop(member)
    shop.create_worker(name="jobs", repo="capstan-samples/hello-monorepo")
    return shop


@pytest.fixture
def cli(member: Org, shop: Ready, tmp_path: Path) -> Cli:
    terminal = Cli(tmp_path / "config", url=member.server.base_url, token=member.token)
    assert terminal.run("use", shop.project["hostname_suffix"]).exit_code == 0
    return terminal


def test_source_shows_and_changes_where_a_service_builds_from(cli: Cli, shop: Ready) -> None:
    shown = cli.json("source", "jobs")["service"]
    assert (shown["root_dir"], shown["dockerfile_path"], shown["watch_paths"]) == (
        "",
        "Dockerfile",
        [],
    )
    changed = cli.json(
        "source",
        "jobs",
        "--root-dir",
        "services/jobs",
        "--watch-path",
        "services/jobs/**",
        "--watch-path",
        "shared/**",
    )["service"]
    assert changed["root_dir"] == "services/jobs"
    assert changed["watch_paths"] == ["services/jobs/**", "shared/**"]
    [worker] = shop.org.api.get(f"{shop.base}/workers").json()["workers"]
    assert worker["root_dir"] == "services/jobs"
    deployments = shop.org.api.get(f"{shop.base}/workers/{worker['id']}/deployments").json()
    assert deployments["deployments"][0]["trigger"] == "patch"  # a new root directory deploys
    table = cli.run("source", "jobs", "--no-watch-paths")
    assert table.exit_code == 0 and "services/jobs" in table.stdout
    assert cli.json("source", "jobs")["service"]["watch_paths"] == []


def test_a_path_leaving_the_repository_is_the_api_s_400(cli: Cli) -> None:
    refused = cli.run("source", "jobs", "--dockerfile", "../Dockerfile")
    assert refused.exit_code == 1 and "dockerfile_path" in refused.stderr
    both = cli.run("source", "jobs", "--watch-path", "a/**", "--no-watch-paths")
    assert both.exit_code == 2 and "not both" in both.stderr
