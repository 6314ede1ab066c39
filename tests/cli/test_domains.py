"""`capstan domains`: add prints the records to create, list shows the domain, remove removes
it; a service that is no web server is refused."""

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
    shop.create_web_server(name="web")
    shop.create_worker(name="jobs")
    return shop


@pytest.fixture
def cli(member: Org, shop: Ready, tmp_path: Path) -> Cli:
    terminal = Cli(tmp_path / "config", url=member.server.base_url, token=member.token)
    assert terminal.run("use", shop.project["hostname_suffix"]).exit_code == 0
    return terminal


def test_add_prints_the_records_list_shows_and_remove_removes(
    cli: Cli, member: Org, shop: Ready
) -> None:
    hostname = f"www.{member.server.unique('cli')}.example.com"
    added = cli.run("domains", "add", "web", hostname.upper())
    assert added.exit_code == 0, added.output
    assert f"Added {hostname} (pending_dns)." in added.stdout
    assert "Create these records at your DNS provider:" in added.stdout
    assert f"CNAME  {hostname}" in added.stdout and "routing" in added.stdout
    assert "validation" in added.stdout

    listed = cli.json("domains", "web")["domains"]
    assert [(d["hostname"], d["status"]) for d in listed] == [(hostname, "pending_dns")]
    assert hostname in cli.run("domains", "web").stdout

    removed = cli.run("domains", "remove", "web", hostname)
    assert removed.exit_code == 0, removed.output
    assert f"Removing {hostname} from web." in removed.stdout
    statuses = {d["status"] for d in cli.json("domains", "web")["domains"]}
    assert statuses <= {"deleting"}
    again = cli.run("domains", "remove", "web", hostname)
    assert again.exit_code == 1 and f"web has no domain {hostname}." in again.output


def test_a_refused_hostname_and_a_worker_are_said_plainly(cli: Cli) -> None:
    bad = cli.run("domains", "add", "web", "10.0.0.1")
    assert bad.exit_code == 1 and "is an IP address" in bad.output
    worker = cli.run("domains", "jobs")
    assert worker.exit_code == 1 and "jobs is not a web server" in worker.output
