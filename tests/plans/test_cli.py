"""`capstan plan`, `apply` and `init` against the live test server: the installed entry point as a
subprocess for plan then apply --yes (following the deployments it started), the rest in-process
through the same typer program."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.apps.helpers import WEB_REPO, WORKER_REPO, Ready, new_shop
from tests.cli.helpers import Cli
from tests.harness import Org

SECRET = "sk_test_" + uuid.uuid4().hex
FILE = f"""
web_servers:
  api:
    repo: {WEB_REPO}
    branch: main
    cpu: 256
    memory: 512
    environment:
      LOG_LEVEL: info
      STRIPE_KEY: {{from_env: STRIPE_KEY}}
caches:
  sessions: {{storage_limit_mb: 128}}
buckets: [uploads]
"""


def terminal(org: Org, tmp_path: Path, shop: Ready) -> Cli:
    cli = Cli(tmp_path / "config", url=org.server.base_url, token=org.token)
    used = cli.run("use", shop.project["hostname_suffix"])
    assert used.exit_code == 0, used.output
    return cli


def write(tmp_path: Path, text: str = FILE) -> Path:
    path = tmp_path / "capstan.yaml"
    path.write_text(text)
    return path


def listed(shop: Ready, kind: str) -> list[dict[str, Any]]:
    key = {"cache": "caches", "storage": "buckets"}.get(kind, kind)
    return list(shop.org.api.get(f"{shop.base}/{kind}").json()[key])


def test_plan_then_apply_yes_through_the_installed_command(
    connected: Org, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shop = new_shop(connected)
    cli = terminal(connected, tmp_path, shop)
    path = write(tmp_path)
    monkeypatch.setenv("STRIPE_KEY", SECRET)

    planned = cli.process("plan", "-f", str(path))
    assert planned.returncode == 0, planned.stderr
    assert "+ create web server api" in planned.stdout
    assert "+ create cache sessions" in planned.stdout
    assert "environment.STRIPE_KEY = (from env STRIPE_KEY)" in planned.stdout
    assert "Monthly run-rate: $0.00 -> $" in planned.stdout
    assert SECRET not in planned.stdout + planned.stderr
    assert listed(shop, "web_servers") == []  # a plan changes nothing

    applied = cli.process("apply", "-f", str(path), "--yes", timeout=180)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "Applied 3 changes." in applied.stdout
    assert "web server api is running deployment" in applied.stdout
    assert SECRET not in applied.stdout + applied.stderr
    [web] = listed(shop, "web_servers")
    assert web["status"] == "running"
    environment = shop.org.api.get(f"{shop.base}/web_servers/{web['id']}/environment").json()
    assert {"name": "STRIPE_KEY", "value": SECRET} in environment["environment"]
    assert [c["name"] for c in listed(shop, "cache")] == ["sessions"]

    again = cli.process("plan", "-f", str(path))
    assert again.returncode == 0, again.stderr
    assert "No changes: the project already matches the file." in again.stdout


@pytest.fixture(scope="module")
def applied_shop(connected: Org, tmp_path_factory: pytest.TempPathFactory) -> Ready:
    """A project made from `FILE` (its secret given), for the in-process tests that read it."""
    shop = new_shop(connected)
    body = yaml.safe_load(FILE)
    body["web_servers"]["api"]["environment"]["STRIPE_KEY"]["value"] = SECRET
    response = shop.org.api.post(f"{shop.base}/apply", json=body)
    assert response.status_code == 200, response.text
    return shop


def test_apply_without_the_secret_in_the_shell_applies_nothing(
    connected: Org, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shop = new_shop(connected)
    cli = terminal(connected, tmp_path, shop)
    monkeypatch.delenv("STRIPE_KEY", raising=False)
    result = cli.run("apply", "-f", str(write(tmp_path)), "--yes")
    assert result.exit_code == 1, result.output
    assert "Not set in this shell: STRIPE_KEY" in result.stderr
    assert "nothing was applied" in result.stderr
    assert listed(shop, "web_servers") == [] and listed(shop, "cache") == []


def test_apply_asks_and_a_no_applies_nothing(
    connected: Org, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shop = new_shop(connected)
    cli = terminal(connected, tmp_path, shop)
    monkeypatch.setenv("STRIPE_KEY", SECRET)
    result = cli.run("apply", "-f", str(write(tmp_path)), input="n\n")
    assert result.exit_code == 1, result.output
    assert "Apply these changes?" in result.stdout
    assert "Nothing applied." in result.stderr
    assert listed(shop, "web_servers") == []


def test_a_value_written_in_the_file_is_refused(
    applied_shop: Ready, tmp_path: Path, connected: Org
) -> None:
    cli = terminal(connected, tmp_path, applied_shop)
    leaky = FILE.replace("{from_env: STRIPE_KEY}", "{from_env: STRIPE_KEY, value: sk_oops}")
    result = cli.run("plan", "-f", str(write(tmp_path, leaky)))
    assert result.exit_code == 1
    assert "a secret is never written in the file" in result.stderr


def test_plan_json_and_a_changed_cpu(
    applied_shop: Ready, tmp_path: Path, connected: Org, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli = terminal(connected, tmp_path, applied_shop)
    monkeypatch.setenv("STRIPE_KEY", SECRET)
    path = write(tmp_path, FILE.replace("cpu: 256\n    memory: 512", "cpu: 512\n    memory: 1024"))
    planned = cli.json("plan", "-f", str(path))
    [change] = planned["changes"]
    assert change["fields"][0] == {"field": "cpu", "before": 256, "after": 512}
    assert planned["monthly_run_rate_usd"]["delta"] > 0
    human = cli.run("plan", "-f", str(path))
    assert "~ update web server api" in human.stdout and "cpu: 256 -> 512" in human.stdout


def test_init_writes_a_file_that_plans_no_changes(
    applied_shop: Ready, tmp_path: Path, connected: Org, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli = terminal(connected, tmp_path, applied_shop)
    monkeypatch.delenv("STRIPE_KEY", raising=False)
    path = tmp_path / "init.yaml"
    result = cli.run("init", "-f", str(path))
    assert result.exit_code == 0, result.output
    text = path.read_text()
    assert SECRET not in text
    written = yaml.safe_load(text)
    assert written["web_servers"]["api"]["environment"] == {
        "LOG_LEVEL": "info",  # not secret-like: its value
        "STRIPE_KEY": {"from_env": "STRIPE_KEY"},
    }
    assert written["caches"] == {"sessions": {"storage_limit_mb": 128}}
    assert written["buckets"] == ["uploads"]
    planned = cli.json("plan", "-f", str(path))
    assert planned["no_changes"] is True, json.dumps(planned["changes"])
    assert cli.run("init", "-f", str(path)).exit_code == 1  # never overwritten without --force
    assert WORKER_REPO not in text


def test_init_writes_plain_values_and_a_worker_that_plans_no_changes(
    connected: Org, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shop = new_shop(connected)
    cli = terminal(connected, tmp_path, shop)
    worker = shop.create_worker(name="jobs")
    variables = {
        "LOG_LEVEL": "debug",
        "WEB_CONCURRENCY": "4",
        "GITHUB_TOKEN": SECRET,
        "BROKER_URL": f"amqp://jobs:{SECRET}@mq.internal/",  # a password in a URL
    }
    body = {"environment": [{"name": k, "value": v} for k, v in variables.items()]}
    put = shop.org.api.put(f"{shop.base}/workers/{worker['id']}/environment", json=body)
    assert put.status_code == 202, put.text
    for name in ("GITHUB_TOKEN", "BROKER_URL"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "init.yaml"
    answer = cli.json("init", "-f", str(path))
    text = path.read_text()
    assert SECRET not in text
    assert yaml.safe_load(text)["workers"]["jobs"] == {
        "repo": WORKER_REPO,
        "branch": "main",
        "start_command": worker["start_command"],
        "cpu": worker["cpu"],
        "memory": worker["memory"],
        "auto_deploy": False,
        "environment": {
            "LOG_LEVEL": "debug",
            "WEB_CONCURRENCY": "4",
            "GITHUB_TOKEN": {"from_env": "GITHUB_TOKEN"},
            "BROKER_URL": {"from_env": "BROKER_URL"},
        },
    }
    assert any(
        note.startswith("2 environment variable(s) that look secret") for note in answer["notes"]
    )
    planned = cli.json("plan", "-f", str(path))
    assert planned["no_changes"] is True, json.dumps(planned["changes"])


def test_apply_prune_deletes_what_the_file_dropped(
    connected: Org, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shop = new_shop(connected)
    cli = terminal(connected, tmp_path, shop)
    monkeypatch.setenv("STRIPE_KEY", SECRET)
    first = cli.run("apply", "-f", str(write(tmp_path)), "--yes", "--no-wait")
    assert first.exit_code == 0, first.output
    cache_section = "caches:\n  sessions: {storage_limit_mb: 128}\n"
    without_cache = write(tmp_path, FILE.replace(cache_section, ""))

    kept = cli.run("apply", "-f", str(without_cache), "--yes", "--no-wait")
    assert kept.exit_code == 0, kept.output
    assert "Left alone (not in the file; --prune deletes them):" in kept.stdout
    assert "No changes: the project already matches the file." in kept.stdout
    assert [c["status"] for c in listed(shop, "cache")] != ["deleting"]

    pruned = cli.run("apply", "-f", str(without_cache), "--yes", "--no-wait", "--prune")
    assert pruned.exit_code == 0, pruned.output
    assert "- delete cache sessions" in pruned.stdout
    # Deleting (or gone already): either way the project now matches the file.
    assert all(c["status"] == "deleting" for c in listed(shop, "cache"))
    assert cli.json("plan", "-f", str(without_cache), "--prune")["no_changes"] is True
