"""`capstan login`, `projects`, `services`, `deploy`, `logs`, `env`, `rollback`, `open` and
`logout` against one live server (the session's, over real HTTP, with the sandbox cloud and git
host) and one connected organization for the module. The entry point runs as a subprocess where
it is the point (sign-in from stdin, exit codes of deploy, Ctrl-C of logs --follow); the rest
runs in-process through the same typer program."""

from __future__ import annotations

import json
import re
import signal
import stat
import time
import tomllib
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from capstan.client import api as client_api
from tests.apps.helpers import Ready, new_shop, ready
from tests.cli.helpers import Cli
from tests.harness import PASSWORD, Org, RunningServer, http_client


@pytest.fixture(scope="module")
def member(server: RunningServer) -> Iterator[Org]:
    org = server.new_org()
    ready(org)  # a connected cloud account and the git host app installed
    yield org
    org.close()


@pytest.fixture(scope="module")
def shop(member: Org) -> Ready:
    """A project with a running web server `api`."""
    shop = new_shop(member)
    web = shop.create_web_server(name="api")
    shop.wait_for(f"{shop.base}/web_servers/{web['id']}", "running")
    return shop


@pytest.fixture
def cli(member: Org, shop: Ready, tmp_path: Path) -> Cli:
    """A terminal with the org's token in CAPSTAN_URL/CAPSTAN_TOKEN and `shop` the default."""
    terminal = Cli(tmp_path / "config", url=member.server.base_url, token=member.token)
    used = terminal.run("use", shop.project["hostname_suffix"])
    assert used.exit_code == 0, used.output
    return terminal


def _service(shop: Ready, kind: str, name: str) -> dict[str, Any]:
    listed = shop.org.api.get(f"{shop.base}/{kind}").json()[kind]
    return next(row for row in listed if row["name"] == name)


def test_login_with_email_and_password_stores_a_0600_config(member: Org, tmp_path: Path) -> None:
    terminal = Cli(tmp_path / "config")
    login = terminal.process(
        "login",
        "--url",
        member.server.base_url,
        "--email",
        member.email,
        "--password-stdin",
        input=f"{PASSWORD}\n",
    )
    assert login.returncode == 0, login.stderr
    assert f"as {member.email}" in login.stdout
    assert stat.S_IMODE(terminal.config_file.stat().st_mode) == 0o600
    stored = tomllib.loads(terminal.config_file.read_text())
    assert stored["url"] == member.server.base_url
    assert stored["token"].startswith("capstan_") and stored["token_id"]
    # The token is a real one, named after the machine, and the session that made it is gone.
    names = [t["name"] for t in member.api.get("/api/api_tokens").json()["api_tokens"]]
    assert any(name.startswith("capstan CLI on ") for name in names)
    listed = terminal.process("projects", "--json")
    assert listed.returncode == 0, listed.stderr
    assert isinstance(json.loads(listed.stdout), list)


def test_a_wrong_password_is_refused_and_nothing_is_stored(member: Org, tmp_path: Path) -> None:
    terminal = Cli(tmp_path / "config")
    result = terminal.run(
        "login",
        "--url",
        member.server.base_url,
        "--email",
        member.email,
        "--password-stdin",
        input="not the password\n",
    )
    assert result.exit_code == 1
    assert "error:" in result.stderr and "401" in result.stderr
    assert not terminal.config_file.exists()


def test_login_with_a_token_and_logout_forgets_it(member: Org, tmp_path: Path) -> None:
    terminal = Cli(tmp_path / "config")
    result = terminal.run("login", "--url", member.server.base_url, "--token", member.token)
    assert result.exit_code == 0, result.output
    stored = tomllib.loads(terminal.config_file.read_text())
    assert stored["token"] == member.token and "token_id" not in stored
    assert terminal.json("projects") is not None
    out = terminal.run("logout")
    assert out.exit_code == 0 and "stays valid" in out.stdout
    assert "token" not in tomllib.loads(terminal.config_file.read_text())
    assert terminal.run("projects").exit_code == 1
    # A token given to login was not login's to revoke.
    assert member.api.get("/api/session").status_code == 200


def test_logout_revokes_the_token_login_created(member: Org, tmp_path: Path) -> None:
    terminal = Cli(tmp_path / "config")
    login = terminal.run(
        "login",
        "--url",
        member.server.base_url,
        "--email",
        member.email,
        "--password-stdin",
        input=f"{PASSWORD}\n",
    )
    assert login.exit_code == 0, login.output
    token = tomllib.loads(terminal.config_file.read_text())["token"]
    with http_client(base_url=member.server.base_url) as client:
        bearer = {"Authorization": f"Bearer {token}"}
        assert client.get("/api/session", headers=bearer).status_code == 200
        out = terminal.run("logout", "--json")
        assert out.exit_code == 0, out.output
        assert json.loads(out.stdout) == {"signed_out": True, "token_revoked": True}
        assert client.get("/api/session", headers=bearer).status_code == 401
    after = terminal.run("services")
    assert after.exit_code == 1 and "Not signed in" in after.stderr


def test_projects_create_use_and_list(member: Org, tmp_path: Path) -> None:
    terminal = Cli(tmp_path / "config", url=member.server.base_url, token=member.token)
    suffix = member.server.unique("cli")
    created = terminal.json("projects", "create", "CLI shop", "--suffix", suffix)
    assert created["hostname_suffix"] == suffix
    again = terminal.run("projects", "create", "Other", "--suffix", suffix)
    assert again.exit_code == 1 and "already in use" in again.stderr
    assert terminal.run("services").exit_code == 1  # no default project yet
    assert terminal.run("use", suffix).exit_code == 0
    assert tomllib.loads(terminal.config_file.read_text())["project"] == created["id"]
    table = terminal.run("projects")
    assert table.exit_code == 0
    (row,) = [line for line in table.stdout.splitlines() if suffix in line]
    assert row.startswith("*")  # the default
    assert terminal.json("services") == []
    assert created["id"] in [p["id"] for p in terminal.json("projects")]
    unknown = terminal.run("use", "no-such-project")
    assert unknown.exit_code == 1 and "No project 'no-such-project'" in unknown.stderr


def test_services_and_status(cli: Cli, shop: Ready) -> None:
    listed = cli.json("services")
    (api,) = [row for row in listed if row["name"] == "api"]
    assert api["kind"] == "web_server" and api["status"] == "running"
    assert api["url"].startswith("http://api.")
    table = cli.run("services")
    (row,) = [line for line in table.stdout.splitlines() if line.startswith("api ")]
    assert "web server" in row and "running" in row and api["url"] in row
    status = cli.json("status", "api")
    assert status["service"]["id"] == api["id"]
    assert status["deployments"][0]["status"] == "running"
    # The table names each deployment's commit by its message's first line too.
    message = status["deployments"][0]["commit_message"]
    assert message
    shown = cli.run("status", "api")
    (deployment_row,) = [
        line for line in shown.stdout.splitlines() if status["deployments"][0]["id"] in line
    ]
    assert message.splitlines()[0] in deployment_row
    by_id = cli.json("status", api["id"])
    assert by_id["service"]["name"] == "api"
    missing = cli.run("status", "nope")
    assert missing.exit_code == 1 and "No service 'nope'" in missing.stderr


def test_deploy_waits_until_running_and_exits_0(cli: Cli, shop: Ready) -> None:
    result = cli.process("deploy", "api")
    assert result.returncode == 0, result.stderr
    assert "web server api is running deployment" in result.stdout
    path = f"{shop.base}/web_servers/{_service(shop, 'web_servers', 'api')['id']}"
    newest = shop.org.api.get(f"{path}/deployments").json()["deployments"][0]
    assert (newest["trigger"], newest["status"]) == ("redeploy", "running")
    assert newest["id"] in result.stdout


def test_deploy_of_a_broken_build_exits_1_with_the_error(cli: Cli, shop: Ready) -> None:
    shop.create_web_server(name="broken", branch="broken-build")
    result = cli.process("deploy", "broken")
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "failed" in result.stderr and "Build failed" in result.stderr
    # The service itself says why, in `capstan status` above its deployments.
    shown = cli.json("status", "broken")["service"]
    assert shown["status"] == "failed" and shown["error"].startswith("Build failed: ")
    assert "error" in cli.run("status", "broken").stdout.split("DEPLOYMENT")[0]


def test_deploy_no_wait_returns_at_once(cli: Cli, shop: Ready) -> None:
    started = cli.json("deploy", "api", "--no-wait")
    assert started["status"] in {"pending", "building", "deploying"}
    assert started["trigger"] == "redeploy"
    path = f"{shop.base}/web_servers/{_service(shop, 'web_servers', 'api')['id']}"
    shop.wait_for(path, "running")


def test_logs_and_logs_follow_until_ctrl_c(cli: Cli, shop: Ready) -> None:
    web = _service(shop, "web_servers", "api")
    path = f"{shop.base}/web_servers/{web['id']}"
    recent = cli.json("logs", "api", "--since", "1h")
    assert any(line["message"] == "listening on :8080" for line in recent["lines"])
    started_before = sum(line["message"] == "listening on :8080" for line in recent["lines"])

    follower = cli.start("logs", "api", "--follow", "--since", "1h", "--json")
    try:
        assert shop.org.api.post(f"{path}/redeploy").status_code == 202
        # The new task's first line appears while the deployment runs.
        printed: list[dict[str, Any]] = []
        deadline = time.monotonic() + 60
        assert follower.stdout is not None
        while sum(line["message"] == "listening on :8080" for line in printed) <= started_before:
            assert time.monotonic() < deadline, printed
            printed.append(json.loads(follower.stdout.readline()))
        follower.send_signal(signal.SIGINT)
        rest, errors = follower.communicate(timeout=30)
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.communicate()  # reaped and its pipes closed, not left to another test
    assert follower.returncode == 0, errors
    assert "Traceback" not in errors and "Stopped following." in errors
    printed += [json.loads(line) for line in rest.splitlines()]
    # No line twice, and none skipped: every line the API holds up to the last one printed.
    keys = [_key(line) for line in printed]
    assert len(keys) == len(set(keys))
    since = min(keys)[0].isoformat()
    held = shop.org.api.get(f"{path}/logs", params={"since": since, "limit": 1000}).json()
    last = max(keys)[0]
    expected = [_key(line) for line in held["lines"] if _key(line)[0] <= last]
    assert sorted(keys) == sorted(expected)


def _key(line: dict[str, str]) -> tuple[datetime, str]:
    return datetime.fromisoformat(line["timestamp"]), line["message"]


def test_logs_of_a_preview_that_is_not_there_is_the_apis_404(cli: Cli) -> None:
    result = cli.run("logs", "api", "--preview", "prv_missing")
    assert result.exit_code == 1
    assert "error:" in result.stderr and "[404 not_found]" in result.stderr


def test_env_set_unset_and_import(cli: Cli, shop: Ready, tmp_path: Path) -> None:
    worker = shop.create_worker(name="envs")
    path = f"{shop.base}/workers/{worker['id']}"

    def stored() -> dict[str, str]:
        body = shop.org.api.get(f"{path}/environment").json()
        return {v["name"]: v["value"] for v in body["environment"]}

    result = cli.run("env", "set", "envs", "LOG_LEVEL=debug", "GREETING=hello world")
    assert result.exit_code == 0, result.output
    assert stored() == {"LOG_LEVEL": "debug", "GREETING": "hello world"}
    assert cli.json("env", "envs") == {
        "environment": [
            {"name": "LOG_LEVEL", "value": "debug"},
            {"name": "GREETING", "value": "hello world"},
        ]
    }
    assert cli.run("env", "unset", "envs", "GREETING").exit_code == 0
    assert stored() == {"LOG_LEVEL": "debug"}
    dotenv = tmp_path / ".env"
    dotenv.write_text("# settings\nexport FEATURE_X=on\nQUOTED='a # b'\nLOG_LEVEL=info\n")
    assert cli.run("env", "import", "envs", str(dotenv)).exit_code == 0
    assert stored() == {"LOG_LEVEL": "info", "FEATURE_X": "on", "QUOTED": "a # b"}
    unchanged = cli.json("env", "set", "envs", "LOG_LEVEL=info")
    assert unchanged["status"] == "unchanged"
    bad = cli.run("env", "set", "envs", "NOT AN ASSIGNMENT")
    assert bad.exit_code == 2 and "NAME=VALUE" in bad.output


def test_a_concurrent_environment_change_is_refused_never_lost(
    cli: Cli, shop: Ready, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker = shop.create_worker(name="racy")
    path = f"{shop.base}/workers/{worker['id']}"
    assert cli.run("env", "set", "racy", "A=1").exit_code == 0
    # Someone changes the environment between the CLI's read and its write.
    teammate = {"environment": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}
    original = client_api.Api.request

    def racing(self: client_api.Api, method: str, url: str, **kwargs: Any) -> httpx.Response:
        response = original(self, method, url, **kwargs)
        if method == "GET" and url.endswith("/environment"):
            assert shop.org.api.put(f"{path}/environment", json=teammate).status_code == 202
        return response

    monkeypatch.setattr(client_api.Api, "request", racing)
    result = cli.run_here("env", "set", "racy", "C=3")
    assert result.exit_code == 1
    assert "changed since it was read" in result.stderr and "nothing was changed" in result.stderr
    body = shop.org.api.get(f"{path}/environment").json()
    assert body == teammate  # the teammate's change stands


def test_put_environment_honours_if_match(shop: Ready) -> None:
    worker = shop.create_worker(name="etag")
    path = f"{shop.base}/workers/{worker['id']}/environment"
    first = shop.org.api.get(path)
    etag = first.headers["ETag"]
    assert etag == shop.org.api.get(path).headers["ETag"]  # stable while nothing changes
    body = {"environment": [{"name": "X", "value": "1"}]}
    assert shop.org.api.put(path, json=body, headers={"If-Match": etag}).status_code == 202
    changed = shop.org.api.get(path).headers["ETag"]
    assert changed != etag
    stale = shop.org.api.put(path, json={"environment": []}, headers={"If-Match": etag})
    assert stale.status_code == 412
    assert stale.json()["error"] == "precondition_failed" and stale.json()["message"]
    assert shop.org.api.get(path).json()["environment"] == [{"name": "X", "value": "1"}]
    assert shop.org.api.put(path, json={"environment": []}).status_code == 202  # no If-Match
    assert shop.org.api.put(path, json=body, headers={"If-Match": "*"}).status_code == 202


def test_a_malformed_if_match_is_a_bad_request_and_changes_nothing(shop: Ready) -> None:
    worker = shop.create_worker(name="etags")
    path = f"{shop.base}/workers/{worker['id']}/environment"
    body = {"environment": [{"name": "X", "value": "1"}]}
    assert shop.org.api.put(path, json=body).status_code == 202
    etag = shop.org.api.get(path).headers["ETag"]
    deployments = shop.org.api.get(f"{shop.base}/workers/{worker['id']}/deployments").json()
    started = [deployment["id"] for deployment in deployments["deployments"]]
    # Empty (a script's unset variable), unquoted, or a quote left open: the client meant a
    # version and did not say one, so it is told so (400), not that the version moved (412).
    for malformed in ("", etag.strip('"'), f"{etag}, abc", '"open', f"{etag},"):
        refused = shop.org.api.put(path, json={"environment": []}, headers={"If-Match": malformed})
        assert refused.status_code == 400, (malformed, refused.text)
        assert refused.json()["error"] == "invalid_request", refused.text
        assert "If-Match" in refused.json()["message"], refused.text
    assert shop.org.api.get(path).json()["environment"] == [{"name": "X", "value": "1"}]
    after = shop.org.api.get(f"{shop.base}/workers/{worker['id']}/deployments").json()
    # no deployment started (those already under way go on moving: their ids are compared)
    assert [deployment["id"] for deployment in after["deployments"]] == started
    # A weak tag never matches (If-Match compares strongly); a list matches by any member.
    weak = shop.org.api.put(path, json=body, headers={"If-Match": f"W/{etag}"})
    assert weak.status_code == 412, weak.text
    listed = shop.org.api.put(path, json=body, headers={"If-Match": f'"other", {etag}'})
    assert listed.status_code == 202, listed.text


def test_the_api_document_declares_the_etag_and_the_412(member: Org) -> None:
    document = member.api.get("/docs/api").json()
    environment = document["paths"]["/api/projects/{project_id}/workers/{service_id}/environment"]
    assert "ETag" in environment["get"]["responses"]["200"]["headers"]
    assert "412" in environment["put"]["responses"]
    (if_match,) = [p for p in environment["put"]["parameters"] if p["name"] == "if-match"]
    assert re.fullmatch(if_match["schema"]["pattern"], '"a1", W/"b"')
    assert not re.search(if_match["schema"]["pattern"], "")
    assert "412" not in environment["get"]["responses"]


def test_rollback_to_the_previous_live_release(cli: Cli, shop: Ready) -> None:
    worker = shop.create_worker(name="jobs")
    path = f"{shop.base}/workers/{worker['id']}"
    shop.wait_for(path, "running")
    (first,) = shop.org.api.get(f"{path}/deployments").json()["deployments"]
    assert cli.run("deploy", "jobs").exit_code == 0
    result = cli.run("rollback", "jobs", "--json")
    assert result.exit_code == 0, result.output
    rolled = json.loads(result.stdout)
    assert rolled["status"] == "running" and rolled["rollback_of"] == first["id"]
    never_live = cli.run("rollback", "jobs", "dep_nonexistent")
    assert never_live.exit_code == 1 and "error:" in never_live.stderr


def test_open_prints_the_url(cli: Cli, shop: Ready) -> None:
    web = _service(shop, "web_servers", "api")
    result = cli.run("open", "api")
    assert result.exit_code == 0
    assert result.stdout.strip() == web["url"]
    # In the sandbox, the port the dev server listens on, where it answers for the service.
    assert urlsplit(web["url"]).port == urlsplit(shop.org.server.base_url).port
    assert cli.json("open", "api") == {"url": web["url"]}
    shop.create_worker(name="nourl")
    worker = cli.run("open", "nourl")
    assert worker.exit_code == 1 and "has no URL" in worker.stderr


@pytest.mark.parametrize(
    "command",
    [
        ["login"],
        ["logout"],
        ["projects"],
        ["projects", "create"],
        ["use"],
        ["services"],
        ["status"],
        ["deploy"],
        ["logs"],
        ["env"],
        ["env", "set"],
        ["env", "unset"],
        ["env", "import"],
        ["rollback"],
        ["open"],
    ],
)
def test_every_user_command_has_help_with_examples(command: list[str], tmp_path: Path) -> None:
    result = Cli(tmp_path).run(*command, "--help")
    assert result.exit_code == 0, result.output
    assert "Examples:" in result.stdout and "$ capstan " in result.stdout
    if command not in (["projects"], ["env"]):
        assert "--json" in result.stdout


def test_the_operator_commands_stay_beside_the_user_commands(tmp_path: Path) -> None:
    result = Cli(tmp_path).run("--help")
    assert result.exit_code == 0
    for name in ("server", "worker", "sandbox", "migrate", "admin", "login", "deploy", "env"):
        assert f" {name} " in result.stdout, name
    assert "Your projects and services" in result.stdout
