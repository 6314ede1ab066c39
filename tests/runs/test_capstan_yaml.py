"""`release_command` in capstan.yaml: planned and applied like the API's field (its change alone
starts no deployment), and written by `capstan init`."""

from __future__ import annotations

from pathlib import Path

from tests.apps.helpers import WEB_REPO, new_shop
from tests.cli.helpers import Cli
from tests.harness import Org
from tests.plans.helpers import post


def _file(release_command: str | None) -> dict[str, object]:
    api: dict[str, object] = {"repo": WEB_REPO, "branch": "main", "cpu": 256, "memory": 512}
    if release_command is not None:
        api["release_command"] = release_command
    return {"web_servers": {"api": api}}


def test_a_release_command_is_planned_applied_and_written_by_init(
    connected: Org, tmp_path: Path
) -> None:
    shop = new_shop(connected)
    planned = post(shop, "plan", _file("python manage.py migrate"))
    (create,) = planned["changes"]
    fields = {field["field"]: field["after"] for field in create["fields"]}
    assert fields["release_command"] == "python manage.py migrate"
    assert post(shop, "apply", _file("python manage.py migrate"))["applied"] is True
    (web,) = shop.org.api.get(f"{shop.base}/web_servers").json()["web_servers"]
    assert web["release_command"] == "python manage.py migrate"
    path = f"{shop.base}/web_servers/{web['id']}"
    shop.wait_for(path, "running")
    deployments = len(shop.org.api.get(f"{path}/deployments").json()["deployments"])

    changed = post(shop, "plan", _file("python manage.py migrate --noinput"))
    (update,) = changed["changes"]
    assert [(f["field"], f["before"], f["after"]) for f in update["fields"]] == [
        ("release_command", "python manage.py migrate", "python manage.py migrate --noinput")
    ]
    applied = post(shop, "apply", _file("python manage.py migrate --noinput"))
    assert applied["applied"] is True and applied["deployments"] == []
    assert len(shop.org.api.get(f"{path}/deployments").json()["deployments"]) == deployments

    terminal = Cli(tmp_path / "config", url=connected.server.base_url, token=connected.token)
    assert terminal.run("use", shop.project["hostname_suffix"]).exit_code == 0
    written = terminal.run("init", "--file", str(tmp_path / "capstan.yaml"))
    assert written.exit_code == 0, written.output
    text = (tmp_path / "capstan.yaml").read_text()
    assert "release_command: python manage.py migrate --noinput" in text
