"""One owner per public hostname: a preview never takes a live web server's hostname (nor
another preview's), a web server never takes a preview's, and a preview's deletion removes only
its own DNS records — production's, at the hostname the preview would have taken, stay."""

from __future__ import annotations

import hashlib

from tests.apps.helpers import Ready, new_shop, served_at
from tests.apps.hostname_helpers import alias_of, balancer_of, owner_of, records_at
from tests.git_host.events_helpers import installation_of, new_repository, push
from tests.harness import Org
from tests.polling import wait_until


def _digest(branch: str) -> str:
    return hashlib.sha256(branch.encode()).hexdigest()[:8]


def _host(shop: Ready, label: str) -> str:
    return f"{label}.{shop.project['hostname_suffix']}.{shop.org.server.settings.domain}"


def test_a_preview_never_takes_a_live_web_servers_hostname(connected: Org) -> None:
    shop = new_shop(connected)
    server, api = connected.server, connected.api
    repo = new_repository(server, installation_of(connected), default_branch="main")
    push(server, repo, "prod3", breaks_build=False)
    production = shop.create_web_server(name="web-prod3", repo=repo)
    production_path = f"{shop.base}/web_servers/{production['id']}"
    parent = shop.create_web_server(name="web", repo=repo)
    shop.wait_for(production_path, "running")
    production_host = _host(shop, "web-prod3")
    assert alias_of(server, production_host) == balancer_of(connected, shop.project["id"])

    # `web@prod3` would be `web-prod3`: production holds it, so the preview gets its own.
    created = api.post(f"{shop.base}/web_servers/{parent['id']}/previews", json={"branch": "prod3"})
    assert created.status_code == 201, created.text
    preview = created.json()
    preview_host = _host(shop, f"web-prod3-{_digest('prod3')}")
    assert preview["url"] == served_at(connected, preview_host) != production["url"]
    assert owner_of(server, production_host) == production["id"]
    preview_path = f"{shop.base}/web_servers/{parent['id']}/previews/{preview['id']}"
    shop.wait_for(preview_path, "running")
    assert owner_of(server, preview_host) == preview["id"]
    production_records = records_at(server, production_host)
    assert owner_of(server, production_host) == production["id"]

    # Deleting the preview removes its records, and none of production's.
    assert api.delete(preview_path).status_code == 204
    wait_until(lambda: records_at(server, preview_host) == {}, what="the preview's records to go")
    assert records_at(server, production_host) == production_records
    assert api.get(production_path).json()["status"] == "running"


def test_branches_that_fold_to_one_label_get_hostnames_of_their_own(connected: Org) -> None:
    shop = new_shop(connected)
    repo = new_repository(connected.server, installation_of(connected), default_branch="main")
    parent = shop.create_web_server(name="web", repo=repo)
    previews = f"{shop.base}/web_servers/{parent['id']}/previews"
    urls = {}
    for branch in ("feat/x", "feat-x", "FEAT-X"):
        push(connected.server, repo, branch, breaks_build=False)
        created = connected.api.post(previews, json={"branch": branch})
        assert created.status_code == 201, created.text
        urls[branch] = created.json()["url"]
    # The first takes `web-feat-x`; the others, whose labels fold to it, one of their own.
    own = {branch: _host(shop, "web-feat-x-" + _digest(branch)) for branch in ("feat-x", "FEAT-X")}
    assert urls == {
        "feat/x": served_at(connected, _host(shop, "web-feat-x")),
        "feat-x": served_at(connected, own["feat-x"]),
        "FEAT-X": served_at(connected, own["FEAT-X"]),
    }
    listed = connected.api.get(previews).json()["previews"]
    assert sorted(p["url"] for p in listed) == sorted(urls.values())
    for preview in listed:
        assert connected.api.delete(f"{previews}/{preview['id']}").status_code == 204


def test_a_web_server_never_takes_a_previews_hostname(connected: Org) -> None:
    shop = new_shop(connected)
    repo = new_repository(connected.server, installation_of(connected), default_branch="main")
    push(connected.server, repo, "topic", breaks_build=False)
    parent = shop.create_web_server(name="web", repo=repo)
    created = connected.api.post(
        f"{shop.base}/web_servers/{parent['id']}/previews", json={"branch": "topic"}
    )
    assert created.status_code == 201, created.text
    assert created.json()["url"] == served_at(connected, _host(shop, "web-topic"))

    body = {"name": "web-topic", "repo": "capstan-samples/hello-web", "branch": "main"}
    for kind, extra in (
        ("web_servers", {"cpu": 256, "memory": 512}),
        ("static_websites", {"build_command": "npm run build", "publish_dir": "dist"}),
    ):
        refused = connected.api.post(f"{shop.base}/{kind}", json=body | extra)
        assert refused.status_code == 409, refused.text
        assert refused.json() == {
            "error": "hostname_taken",
            "message": f"The hostname {_host(shop, 'web-topic')} is taken: the preview of web "
            "server 'web' for 'topic' of this project serves it.",
        }
    # Nothing of the refused creations was kept: the project lists the one web server.
    listed = connected.api.get(f"{shop.base}/web_servers").json()["web_servers"]
    assert [item["name"] for item in listed] == ["web"]
    assert connected.api.get(f"{shop.base}/static_websites").json()["static_websites"] == []
