"""capstan.yaml through the HTTP API against the sandbox: apply to an empty project creates
everything; plan then shows no changes and a second apply changes nothing; a larger cpu shows its
change and a monthly delta equal to the cost endpoint's; prune deletes what the file dropped (and
without it that is left alone); a refused change fails the whole apply with nothing written."""

from __future__ import annotations

import copy
import uuid
from typing import Any

import pytest

from tests.apps.helpers import WEB_REPO, Ready, new_shop
from tests.harness import Org
from tests.plans.helpers import FILE, SECRET, post, rows


def document(**changes: Any) -> dict[str, Any]:
    body = copy.deepcopy(FILE)
    body.update(changes)
    return body


@pytest.fixture(scope="module")
def applied(connected: Org) -> tuple[Ready, dict[str, Any]]:
    """One project made from `FILE`, for the tests that only look at it."""
    shop = new_shop(connected)
    return shop, post(shop, "apply", FILE)


def test_apply_to_an_empty_project_creates_everything(
    applied: tuple[Ready, dict[str, Any]],
) -> None:
    shop, result = applied
    api = shop.org.api
    assert result["applied"] is True
    assert {(c["action"], c["kind"], c["name"]) for c in result["changes"]} == {
        ("create", "web_server", "api"),
        ("create", "worker", "jobs"),
        ("create", "static_website", "docs"),
        ("create", "cache", "sessions"),
        ("create", "bucket", "uploads"),
    }
    [web] = api.get(f"{shop.base}/web_servers").json()["web_servers"]
    assert (web["name"], web["cpu"], web["memory"], web["repo"]) == ("api", 256, 512, WEB_REPO)
    [worker] = api.get(f"{shop.base}/workers").json()["workers"]
    assert worker["start_command"] == "python worker.py"
    [site] = api.get(f"{shop.base}/static_websites").json()["static_websites"]
    assert site["publish_dir"] == "dist"
    [cache] = api.get(f"{shop.base}/cache").json()["caches"]
    assert (cache["name"], cache["storage_limit_mb"]) == ("sessions", 256)
    [bucket] = api.get(f"{shop.base}/storage").json()["buckets"]
    assert bucket["name"] == "uploads"
    environment = api.get(f"{shop.base}/web_servers/{web['id']}/environment").json()
    assert environment["environment"] == [
        {"name": "LOG_LEVEL", "value": "info"},
        {"name": "STRIPE_KEY", "value": SECRET},
    ]
    # The deployments to follow: one per service, each the service's newest.
    started = {d["name"]: d for d in result["deployments"]}
    assert set(started) == {"api", "jobs", "docs"}
    newest = api.get(f"{shop.base}/web_servers/{web['id']}/deployments").json()["deployments"][0]
    assert started["api"]["deployment_id"] == newest["id"]


def test_a_secret_is_shown_by_its_variable_never_its_value(
    applied: tuple[Ready, dict[str, Any]],
) -> None:
    shop, result = applied
    assert SECRET not in str(result)
    fields = {f["field"]: f["after"] for c in result["changes"] for f in c["fields"]}
    assert fields["environment.STRIPE_KEY"] == "(from env STRIPE_KEY)"
    assert fields["environment.LOG_LEVEL"] == "info"
    changed = copy.deepcopy(FILE)
    changed["web_servers"]["api"]["environment"]["STRIPE_KEY"]["value"] = "another secret"
    planned = shop.org.api.post(f"{shop.base}/plan", json=changed)
    assert SECRET not in planned.text and "another secret" not in planned.text
    [change] = planned.json()["changes"]
    assert change["fields"] == [
        {"field": "environment.STRIPE_KEY", "before": "(set)", "after": "(from env STRIPE_KEY)"}
    ]


def test_an_applied_file_plans_no_changes_and_applies_nothing(
    applied: tuple[Ready, dict[str, Any]],
) -> None:
    shop, _result = applied
    before = rows(shop)
    planned = post(shop, "plan", FILE)
    assert planned["no_changes"] is True and planned["changes"] == []
    assert planned["monthly_run_rate_usd"]["delta"] == 0
    # A plan made without the secret in the shell cannot compare it: a set variable stays.
    without_value = copy.deepcopy(FILE)
    del without_value["web_servers"]["api"]["environment"]["STRIPE_KEY"]["value"]
    assert post(shop, "plan", without_value)["no_changes"] is True
    again = post(shop, "apply", FILE)
    assert again["applied"] is False
    assert again["message"] == "No changes: the project already matches the file."
    assert again["deployments"] == []
    assert rows(shop) == before


def test_a_larger_cpu_costs_what_the_cost_endpoint_says(connected: Org) -> None:
    shop = new_shop(connected)
    small = {"web_servers": FILE["web_servers"]}
    post(shop, "apply", small)
    [web] = shop.org.api.get(f"{shop.base}/web_servers").json()["web_servers"]
    cost_path = f"{shop.base}/web_servers/{web['id']}/cost"
    rate_before = shop.org.api.get(cost_path).json()["monthly_run_rate_usd"]

    larger = copy.deepcopy(small)
    larger["web_servers"]["api"].update(cpu=1024, memory=2048)
    planned = post(shop, "plan", larger)
    [change] = planned["changes"]
    assert (change["action"], change["name"]) == ("update", "api")
    assert change["fields"] == [
        {"field": "cpu", "before": 256, "after": 1024},
        {"field": "memory", "before": 512, "after": 2048},
    ]
    rate = planned["monthly_run_rate_usd"]
    assert rate["delta"] > 0
    # The project's run-rate: the web server's, and what it shares (its load balancer, the
    # public IPv4 addresses), which a larger cpu leaves as it is.
    shared = [line["monthly_usd_before"] for line in planned["shared"]]
    assert [line["item"] for line in planned["shared"]] == [
        "load_balancer",
        "load_balancer_ipv4",
        "task_ipv4",
    ]
    assert all(
        line["monthly_usd_after"] == line["monthly_usd_before"] for line in planned["shared"]
    )
    assert rate["before"] == round(rate_before + sum(shared), 2)
    assert shop.org.api.get(f"{shop.base}/web_servers/{web['id']}").json()["cpu"] == 256

    result = post(shop, "apply", larger)
    assert [d["name"] for d in result["deployments"]] == ["api"]
    rate_after = shop.org.api.get(cost_path).json()["monthly_run_rate_usd"]
    assert rate["delta"] == round(rate_after - rate_before, 2)
    assert rate["after"] == round(rate_after + sum(shared), 2)


def test_prune_deletes_what_the_file_dropped_and_only_with_prune(connected: Org) -> None:
    shop = new_shop(connected)
    both = {"web_servers": FILE["web_servers"], "workers": FILE["workers"]}
    post(shop, "apply", both)
    only_web = {"web_servers": FILE["web_servers"]}

    planned = post(shop, "plan", only_web)
    assert planned["no_changes"] is True
    [kept] = planned["left_alone"]
    assert (kept["kind"], kept["name"]) == ("worker", "jobs")
    assert post(shop, "apply", only_web)["applied"] is False
    assert len(shop.org.api.get(f"{shop.base}/workers").json()["workers"]) == 1

    pruning = post(shop, "plan", only_web, prune="true")
    [change] = pruning["changes"]
    assert (change["action"], change["kind"], change["name"]) == ("delete", "worker", "jobs")
    # The worker, and its task's public IPv4 address (a line of the project's).
    [addresses] = [line for line in pruning["shared"] if line["item"] == "task_ipv4"]
    assert (addresses["quantity_before"], addresses["quantity_after"]) == (2, 1)
    address = addresses["monthly_usd_before"] - addresses["monthly_usd_after"]
    assert pruning["monthly_run_rate_usd"]["delta"] == round(
        -change["monthly_usd_before"] - address, 2
    )
    post(shop, "apply", only_web, prune="true")
    assert shop.org.api.get(f"{shop.base}/workers").json()["workers"] == []
    assert len(shop.org.api.get(f"{shop.base}/web_servers").json()["web_servers"]) == 1


def test_an_invalid_size_is_refused_by_field_with_nothing_written(connected: Org) -> None:
    shop = new_shop(connected)
    body = document()
    # `api` is valid and written first; `admin`'s pair is not: the whole apply must go.
    body["web_servers"]["admin"] = {**body["web_servers"]["api"], "cpu": 256, "memory": 4096}
    for what in ("plan", "apply"):
        response = shop.org.api.post(f"{shop.base}/{what}", json=body)
        assert response.status_code == 400, response.text
        error = response.json()
        assert error["error"] == "invalid_memory"
        assert error["message"].startswith("web_servers.admin: memory 4096")
        assert [d["field"] for d in error["details"]] == ["web_servers.admin.memory"]
    assert rows(shop) == {"services": 0, "caches": 0, "buckets": 0, "deployments": 0}


def test_a_secret_without_its_value_is_refused_at_apply(connected: Org) -> None:
    shop = new_shop(connected)
    body = document()
    del body["web_servers"]["api"]["environment"]["STRIPE_KEY"]["value"]
    response = shop.org.api.post(f"{shop.base}/apply", json=body)
    assert response.status_code == 400, response.text
    assert response.json()["error"] == "from_env_missing"
    assert [d["field"] for d in response.json()["details"]] == [
        "web_servers.api.environment.STRIPE_KEY"
    ]
    assert rows(shop)["services"] == 0


def test_a_retried_apply_with_its_idempotency_key_writes_once(connected: Org) -> None:
    shop = new_shop(connected)
    body = {"workers": FILE["workers"]}
    headers = {"Idempotency-Key": str(uuid.uuid4())}
    first = shop.org.api.post(f"{shop.base}/apply", json=body, headers=headers)
    second = shop.org.api.post(f"{shop.base}/apply", json=body, headers=headers)
    assert first.status_code == second.status_code == 200
    assert second.headers.get("Idempotent-Replayed") == "true"
    assert second.json() == first.json() and first.json()["applied"] is True
    assert rows(shop)["deployments"] == 1


def test_bad_files_are_refused_by_field(connected: Org) -> None:
    shop = new_shop(connected)
    api = shop.org.api
    cases = [
        ({"web_servers": {"Bad_Name": FILE["web_servers"]["api"]}}, "web_servers.Bad_Name"),
        ({"workers": {"jobs": {**FILE["workers"]["jobs"], "cpu": 300}}}, "workers.jobs.cpu"),
        ({"caches": {"c": {"storage_limit_mb": 64}}}, "caches.c.storage_limit_mb"),
        ({"buckets": ["a", "a"]}, "buckets"),
        ({"databases": {"m": {"storage_gb": 5}}}, "databases.m.storage_gb"),
    ]
    for body, field in cases:
        response = api.post(f"{shop.base}/plan", json=body)
        assert response.status_code == 400, (body, response.text)
        fields = [d["field"] for d in response.json()["details"]]
        assert any(f.startswith(field) for f in fields), (body, fields)


def test_a_repository_cannot_change(applied: tuple[Ready, dict[str, Any]]) -> None:
    shop, _result = applied
    body = document()
    body["workers"]["jobs"]["repo"] = WEB_REPO
    response = shop.org.api.post(f"{shop.base}/plan", json=body)
    assert response.status_code == 400, response.text
    assert response.json()["details"][0]["field"] == "workers.jobs.repo"


def test_another_organizations_project_is_not_found(
    applied: tuple[Ready, dict[str, Any]], other_org: Org
) -> None:
    shop, _result = applied
    response = other_org.api.post(f"{shop.base}/plan", json=FILE)
    assert response.status_code == 404, response.text


def test_model_access_is_set_by_the_file_and_only_when_named(connected: Org) -> None:
    shop = new_shop(connected)
    haiku = "anthropic.claude-3-haiku-20240307-v1:0"
    planned = post(shop, "plan", {"model_access": [haiku]})
    [change] = planned["changes"]
    assert (change["kind"], change["fields"]) == (
        "model_access",
        [{"field": "model_access", "before": [], "after": [haiku]}],
    )
    post(shop, "apply", {"model_access": [haiku]})
    access = shop.org.api.get(f"{shop.base}/model_access").json()
    assert (access["enabled"], access["allowed_model_ids"]) == (True, [haiku])
    assert post(shop, "plan", {"model_access": [haiku]})["no_changes"] is True
    assert post(shop, "plan", {})["no_changes"] is True  # left out: not managed

    unknown = shop.org.api.post(f"{shop.base}/plan", json={"model_access": ["acme.nope-v1"]})
    assert unknown.status_code == 400, unknown.text
    assert unknown.json()["details"][0]["field"] == "model_access.model_ids"


def test_a_cache_grows_at_its_cost_endpoints_price_and_never_shrinks(
    applied: tuple[Ready, dict[str, Any]],
) -> None:
    shop, _result = applied
    [cache] = shop.org.api.get(f"{shop.base}/cache").json()["caches"]
    estimate = shop.org.api.get(f"{shop.base}/cache/{cache['id']}/cost").json()
    smaller = document(caches={"sessions": {"storage_limit_mb": 128}})
    refused = shop.org.api.post(f"{shop.base}/plan", json=smaller)
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"] == "cache_downsize_unsupported"
    assert refused.json()["details"][0]["field"] == "caches.sessions"

    larger = post(shop, "plan", document(caches={"sessions": {"storage_limit_mb": 512}}))
    [change] = larger["changes"]
    assert change["monthly_usd_before"] == estimate["estimated_monthly_usd"]
    assert change["monthly_usd_after"] > change["monthly_usd_before"]
    assert larger["monthly_run_rate_usd"]["delta"] == round(
        change["monthly_usd_after"] - change["monthly_usd_before"], 2
    )
