"""`capstan run SERVICE -- COMMAND` and `capstan runs SERVICE` against a server on the sandbox."""

from __future__ import annotations

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


def test_run_prints_the_output_and_exits_with_the_commands_code(cli: Cli) -> None:
    result = cli.run("run", "web", "--", "echo hi; exit 3")
    assert result.exit_code == 3, result.output
    assert result.stdout == "hi\n"
    assert "The command exited with code 3." in result.stderr
    ok = cli.run("run", "web", "--", "echo", "two", "words")
    assert (ok.exit_code, ok.stdout) == (0, "two words\n")
    listed = cli.json("runs", "web")["runs"]
    assert [(item["command"], item["exit_code"]) for item in listed[:2]] == [
        ("echo two words", 0),
        ("echo hi; exit 3", 3),
    ]
    table = cli.run("runs", "web")
    assert table.exit_code == 0 and "echo hi; exit 3" in table.stdout


def test_run_explains_what_it_cannot_do(cli: Cli) -> None:
    refused = cli.run("run", "web", "--cpu", "300", "--", "true")
    assert refused.exit_code == 1 and "error:" in refused.stderr and "cpu" in refused.stderr
