"""`domains:` on a web server in capstan.yaml: planned as one field (before, after), applied
by adding and removing the web server's domains; a hostname held elsewhere fails the whole
apply with nothing written; left out, the file leaves the domains alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.apps.helpers import WEB_REPO, Ready, new_shop
from tests.cli.helpers import Cli
from tests.harness import Org
from tests.plans.helpers import post


def _file(domains: list[str] | None) -> dict[str, Any]:
    web: dict[str, Any] = {"repo": WEB_REPO, "branch": "main", "cpu": 256, "memory": 512}
    if domains is not None:
        web["domains"] = domains
    return {"web_servers": {"web": web}}


def _hostnames(shop: Ready) -> list[str]:
    [web] = shop.org.api.get(f"{shop.base}/web_servers").json()["web_servers"]
    listed = shop.org.api.get(f"{shop.base}/web_servers/{web['id']}/domains").json()["domains"]
    return sorted(d["hostname"] for d in listed if d["status"] != "deleting")


def _fields(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [field for change in result["changes"] for field in change["fields"]]


def test_domains_are_planned_applied_and_removed(connected: Org, tmp_path: Path) -> None:
    shop = new_shop(connected)
    first = f"www.{connected.server.unique('yaml')}.example.com"
    second = f"api.{connected.server.unique('yaml')}.example.com"

    applied = post(shop, "apply", _file([first.upper()]))
    assert {"field": "domains", "before": None, "after": [first]} in _fields(applied)
    assert _hostnames(shop) == [first]
    assert post(shop, "plan", _file([first]))["changes"] == []
    # Left out, the file does not manage them.
    assert post(shop, "plan", _file(None))["changes"] == []
    # `capstan init` writes them.
    cli = Cli(tmp_path / "config", url=connected.server.base_url, token=connected.token)
    assert cli.run("use", shop.project["hostname_suffix"]).exit_code == 0
    path = tmp_path / "capstan.yaml"
    assert cli.run("init", "-f", str(path)).exit_code == 0
    assert yaml.safe_load(path.read_text())["web_servers"]["web"]["domains"] == [first]

    planned = post(shop, "plan", _file([second]))
    [change] = planned["changes"]
    assert (change["action"], change["fields"]) == (
        "update",
        [{"field": "domains", "before": [first], "after": [second]}],
    )
    post(shop, "apply", _file([second]))
    assert _hostnames(shop) == [second]
    post(shop, "apply", _file([]))
    assert _hostnames(shop) == []


def test_a_hostname_held_elsewhere_fails_the_apply_with_nothing_written(
    connected: Org, other_org: Org
) -> None:
    from tests.apps.helpers import ready

    theirs = ready(other_org)
    their_web = theirs.create_web_server(name="web")
    hostname = f"www.{connected.server.unique('held')}.example.com"
    taken = other_org.api.post(
        f"{theirs.base}/web_servers/{their_web['id']}/domains", json={"hostname": hostname}
    )
    assert taken.status_code == 201, taken.text

    shop = new_shop(connected)
    refused = connected.api.post(f"{shop.base}/apply", json=_file([hostname]))
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"] == "domain_taken"
    assert connected.api.get(f"{shop.base}/web_servers").json()["web_servers"] == []
    bad = connected.api.post(f"{shop.base}/apply", json=_file(["10.0.0.1"]))
    assert bad.status_code == 400 and bad.json()["error"] == "invalid_hostname"
