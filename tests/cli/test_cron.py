"""`capstan cron ...` against a server on the sandbox: create, list, run now (its output and
exit code), runs, disable, delete."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.apps.helpers import Ready, new_shop, ready, simulator_knobs
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
    """A project with a running web server `web`."""
    shop = new_shop(member)
    web = shop.create_web_server(name="web")
    shop.wait_for(f"{shop.base}/web_servers/{web['id']}", "running")
    return shop


@pytest.fixture
def cli(member: Org, shop: Ready, tmp_path: Path) -> Iterator[Cli]:
    terminal = Cli(tmp_path / "config", url=member.server.base_url, token=member.token)
    assert terminal.run("use", shop.project["hostname_suffix"]).exit_code == 0
    with simulator_knobs(task_start_seconds=0):
        yield terminal


def test_cron_creates_runs_lists_disables_and_deletes_a_job(cli: Cli) -> None:
    made = cli.run(
        "cron", "create", "--json", "nightly", "web", "0 3 * * *", "--", "echo hi; exit 3"
    )
    assert made.exit_code == 0, made.output
    created = json.loads(made.stdout)
    assert (created["name"], created["schedule"], created["command"]) == (
        "nightly",
        "0 3 * * *",
        "echo hi; exit 3",
    )
    listed = cli.run("cron", "list")
    assert listed.exit_code == 0 and "nightly" in listed.stdout and "0 3 * * *" in listed.stdout
    ran = cli.run("cron", "run", "nightly")
    assert ran.exit_code == 3, ran.output
    assert ran.stdout == "hi\n"
    runs = cli.json("cron", "runs", "nightly")["runs"]
    assert [(run["trigger"], run["exit_code"]) for run in runs] == [("manual", 3)]
    disabled = cli.json("cron", "update", "nightly", "--disable")
    assert (disabled["enabled"], disabled["next_run_at"]) == (False, None)
    bad = cli.run("cron", "update", "nightly", "--schedule", "0 25 * * *")
    assert bad.exit_code == 1 and "hour" in bad.stderr
    assert cli.run("cron", "delete", "nightly").exit_code == 0
    assert cli.json("cron", "list")["cron_jobs"] == []
    missing = cli.run("cron", "run", "nightly")
    assert missing.exit_code == 1 and "No cron job" in missing.stderr
