"""A plan computes what apply would meet: for each rule a step of a capstan.yaml can break, the
plan answers exactly what apply answers (status and body), and neither writes anything; and a
plan that frees a name before taking it passes, as apply does. The rules are the API's own
(the hostnames web servers and static websites share, the names Capstan sets, a service's one
database reference, a repository the git host app can read, the task role's policy size, the
bytes a variable's value may take)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.apps.helpers import WEB_REPO, Ready, new_shop
from tests.harness import Org
from tests.plans.helpers import rows

SITE_REPO = "capstan-samples/hello-static"
WEB = {"repo": WEB_REPO, "branch": "main", "cpu": 256, "memory": 512}
SITE = {"repo": SITE_REPO, "branch": "main", "build_command": "make", "publish_dir": "dist"}
NOTHING = {"services": 0, "caches": 0, "buckets": 0, "deployments": 0}

REFUSED: dict[str, tuple[dict[str, Any], int, str, str]] = {
    "hostname shared by a web server and a site": (
        {"web_servers": {"www": WEB}, "static_websites": {"www": SITE}},
        409,
        "hostname_taken",
        "static_websites.www",
    ),
    "a name Capstan sets": (
        {"web_servers": {"api": {**WEB, "environment": {"PORT": "9000"}}}},
        400,
        "reserved_variable",
        "web_servers.api.environment",
    ),
    "two databases referenced": (
        {
            "databases": {"one": {}, "two": {}},
            "web_servers": {
                "api": {**WEB, "environment": {"A": {"database": "one"}, "B": {"database": "two"}}}
            },
        },
        400,
        "invalid_reference",
        "web_servers.api.environment",
    ),
    "PGPASSWORD beside a reference": (
        {
            "databases": {"one": {}},
            "web_servers": {
                "api": {**WEB, "environment": {"A": {"database": "one"}, "PGPASSWORD": "x"}}
            },
        },
        400,
        "invalid_reference",
        "web_servers.api.environment",
    ),
    "a reference on a static website": (
        {
            "databases": {"one": {}},
            "static_websites": {"docs": {**SITE, "environment": {"A": {"database": "one"}}}},
        },
        400,
        "invalid_reference",
        "static_websites.docs.environment",
    ),
    "a value over 8 KiB in bytes": (
        {"web_servers": {"api": {**WEB, "environment": {"KEY": "€" * 3000}}}},
        400,
        "invalid_request",
        "web_servers.api.environment.KEY",
    ),
    "a repository the app cannot read": (
        {"workers": {"jobs": {**WEB, "repo": "capstan-samples/nope", "start_command": "run"}}},
        400,
        "repo_not_accessible",
        "workers.jobs",
    ),
    "more buckets than the task role's policy holds": (
        {"buckets": [f"{index:03d}-{'long label ' * 6}" for index in range(100)]},
        409,
        "quota_exceeded",
        "buckets.",
    ),
}


def answers(shop: Ready, document: dict[str, Any], **params: Any) -> list[tuple[int, Any]]:
    found = []
    for what in ("plan", "apply"):
        response = shop.org.api.post(f"{shop.base}/{what}", json=document, params=params)
        found.append((response.status_code, response.json()))
    return found


@pytest.mark.parametrize("rule", list(REFUSED))
def test_a_plan_refuses_what_apply_refuses_with_the_same_answer(connected: Org, rule: str) -> None:
    shop = new_shop(connected)
    document, status, code, field = REFUSED[rule]
    planned, applied = answers(shop, document)
    assert planned == applied
    assert (planned[0], planned[1]["error"]) == (status, code), planned
    assert any(d["field"].startswith(field) for d in planned[1]["details"]), planned
    assert rows(shop) == NOTHING


def test_a_name_freed_by_prune_may_be_taken_in_the_same_plan(connected: Org) -> None:
    shop = new_shop(connected)
    applied = shop.org.api.post(f"{shop.base}/apply", json={"web_servers": {"www": WEB}})
    assert applied.status_code == 200, applied.text
    site = {"static_websites": {"www": SITE}}
    refused = answers(shop, site)
    assert refused[0] == refused[1] and refused[0][0] == 409, refused
    planned, replaced = answers(shop, copy.deepcopy(site), prune="true")
    assert planned[0] == replaced[0] == 200, (planned, replaced)
    assert {(c["action"], c["kind"]) for c in planned[1]["changes"]} == {
        ("delete", "web_server"),
        ("create", "static_website"),
    }
    assert replaced[1]["changes"] == planned[1]["changes"]


def test_a_plan_refuses_a_hostname_a_preview_holds_as_apply_does(connected: Org) -> None:
    shop = new_shop(connected)
    applied = shop.org.api.post(f"{shop.base}/apply", json={"web_servers": {"web": WEB}})
    assert applied.status_code == 200, applied.text
    web = shop.org.api.get(f"{shop.base}/web_servers").json()["web_servers"][0]
    preview = shop.org.api.post(
        f"{shop.base}/web_servers/{web['id']}/previews", json={"branch": "feature-x"}
    )
    assert preview.status_code == 201, preview.text
    document = {"web_servers": {"web": WEB}, "static_websites": {"web-feature-x": SITE}}
    planned, applied_again = answers(shop, document)
    assert planned == applied_again
    assert (planned[0], planned[1]["error"]) == (409, "hostname_taken"), planned
    assert "web-feature-x." in planned[1]["message"]
