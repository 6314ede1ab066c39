"""`watch_paths` against the sandbox git host: a push whose changed files (the webhook's
`commits[].added/modified/removed`) match none of a service's patterns does not deploy it, and
the git event records why; a push touching a watched file deploys as before."""

from __future__ import annotations

from tests.apps.helpers import Ready
from tests.git_host.events_helpers import (
    delivery_outcome,
    installation_of,
    new_repository,
    org_fixture,
    push,
    pushed_shas,
    recent_deliveries,
    wait_processed,
    wait_pushed,
    web_path,
    worker_path,
)
from tests.sandbox_git_host.helpers import api as api_client
from tests.sandbox_git_host.helpers import jwt_headers

shop = org_fixture()


def test_a_push_deploys_only_services_whose_watch_paths_it_touches(shop: Ready) -> None:
    server, org = shop.org.server, shop.org
    repo = new_repository(server, installation_of(org), default_branch="main")
    api = web_path(shop, repo=repo, auto_deploy=True, watch_paths=["services/api/**"])
    jobs = worker_path(shop, repo=repo, auto_deploy=True, watch_paths=["services/jobs/**"])
    everything = worker_path(shop, repo=repo, auto_deploy=True)  # no watch_paths: every push

    docs = push(server, repo, "main", breaks_build=False, files=["docs/README.md"])
    (delivery,) = docs["deliveries"]
    wait_processed(server, delivery["guid"])
    wait_pushed(org, everything, docs["sha"])
    assert pushed_shas(org, api) == [] and pushed_shas(org, jobs) == []
    outcome = delivery_outcome(server, delivery["guid"])
    assert outcome is not None
    assert outcome.startswith(f"deployed 1 target(s) at {docs['sha'][:12]}"), outcome
    assert "no changed file matches their watch_paths" in outcome
    assert "web server 'web-" in outcome and "worker 'jobs-" in outcome

    api_change = push(
        server, repo, "main", breaks_build=False, files=["services/api/app.py", "README.md"]
    )
    wait_processed(server, *(d["guid"] for d in api_change["deliveries"]))
    wait_pushed(org, api, api_change["sha"])
    assert api_change["sha"] not in pushed_shas(org, jobs)
    outcome = delivery_outcome(server, api_change["deliveries"][0]["guid"])
    assert outcome is not None and outcome.startswith("deployed 2 target(s)"), outcome
    assert "worker 'jobs-" in outcome and "web server" not in outcome


def test_a_push_without_a_file_list_changes_every_file(shop: Ready) -> None:
    """Without `files` the sandbox lists every file of the repository as changed, as a push
    that touched them all would: a watched one is among them."""
    server, org = shop.org.server, shop.org
    repo = new_repository(server, installation_of(org), default_branch="main")
    api = web_path(shop, repo=repo, auto_deploy=True, watch_paths=["Dockerfile"])
    pushed = push(server, repo, "main", breaks_build=False)
    wait_pushed(org, api, pushed["sha"])
    (latest, *_) = recent_deliveries(server, "push")
    assert latest["guid"] == pushed["deliveries"][0]["guid"]
    with api_client(server) as client:
        detail = client.get(f"app/hook/deliveries/{latest['id']}", headers=jwt_headers(server))
    (commit,) = detail.json()["request"]["payload"]["commits"]
    assert commit["modified"] == ["Dockerfile", "app.py", "capstan-sandbox.json"]
