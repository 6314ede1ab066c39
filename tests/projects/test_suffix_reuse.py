"""A hostname suffix a project renamed away from is free for another project at once, and the
first project's services, when they move off it or are deleted, remove only their own DNS records
there — never those of the project that took the suffix next."""

from __future__ import annotations

from tests.apps.helpers import Ready, new_shop
from tests.apps.hostname_helpers import alias_of, balancer_of, owner_of
from tests.harness import Org
from tests.polling import wait_until


def test_a_freed_suffix_keeps_its_next_owners_records(connected: Org) -> None:
    server, api = connected.server, connected.api
    domain = server.settings.domain
    first = new_shop(connected, stem="first")
    suffix = first.project["hostname_suffix"]
    host = f"web.{suffix}.{domain}"
    web = first.create_web_server(name="web")
    path = f"{first.base}/web_servers/{web['id']}"
    first.wait_for(path, "running")
    assert alias_of(server, host) == balancer_of(connected, first.project["id"])
    # Its next deployment fails: it keeps running where it was, and its record stays at the old
    # hostname until a deployment of it rolls out again.
    assert api.patch(path, json={"branch": "broken-build"}).status_code == 200
    first.wait_for(path, "failed")
    moved = server.unique("moved")
    assert api.patch(first.base, json={"hostname_suffix": moved}).status_code == 200

    # Another project takes the freed suffix, and the same name, at once.
    created = api.post("/api/projects", json={"name": "Second", "hostname_suffix": suffix})
    assert created.status_code == 201, created.text
    second = Ready(org=connected, project=created.json())
    theirs = second.create_web_server(name="web")
    second.wait_for(f"{second.base}/web_servers/{theirs['id']}", "running")
    their_balancer = balancer_of(connected, second.project["id"])
    assert alias_of(server, host) == their_balancer

    # The first project's service rolls out again (moving off its old hostname), then goes.
    assert api.patch(path, json={"branch": "main"}).status_code == 200
    first.wait_for(path, "running")
    assert alias_of(server, f"web.{moved}.{domain}") == balancer_of(connected, first.project["id"])
    assert api.delete(path).status_code == 204
    wait_until(
        lambda: alias_of(server, f"web.{moved}.{domain}") is None,
        what="the first project's record to go",
    )
    first.delete_project()
    assert alias_of(server, host) == their_balancer
    assert owner_of(server, host) == theirs["id"]
    assert api.get(f"{second.base}/web_servers/{theirs['id']}").json()["status"] == "running"
