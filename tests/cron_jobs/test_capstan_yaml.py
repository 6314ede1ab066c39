"""`cron_jobs:` in capstan.yaml: planned with their cost (a task of the job's size for each
run), applied in the same file as the service they run in, changed, left alone, and pruned."""

from __future__ import annotations

from typing import Any

from capstan.plans.pricing import CRON_RUN_MINUTES, cron_job_monthly_usd
from tests.apps.helpers import WEB_REPO, new_shop
from tests.harness import Org
from tests.plans.helpers import post


def _file(jobs: dict[str, Any]) -> dict[str, Any]:
    api = {"repo": WEB_REPO, "branch": "main", "cpu": 256, "memory": 512}
    return {"web_servers": {"api": api}, "cron_jobs": jobs}


NIGHTLY = {"schedule": "0 3 * * *", "command": "python manage.py clearsessions", "service": "api"}


def test_cron_jobs_are_planned_with_their_cost_applied_changed_and_pruned(connected: Org) -> None:
    shop = new_shop(connected)
    planned = post(shop, "plan", _file({"nightly": NIGHTLY}))
    job = next(change for change in planned["changes"] if change["kind"] == "cron_job")
    assert (job["action"], job["name"]) == ("create", "nightly")
    settings = {"schedule": "0 3 * * *", "enabled": True, "cpu": 256, "memory": 512}
    assert job["monthly_usd_after"] == cron_job_monthly_usd(settings, "us-east-1")
    assert CRON_RUN_MINUTES == 5  # 30 runs of 5 minutes of 0.25 vCPU and 0.5 GB
    assert post(shop, "apply", _file({"nightly": NIGHTLY}))["applied"] is True
    (made,) = shop.org.api.get(f"{shop.base}/cron_jobs").json()["cron_jobs"]
    assert (made["name"], made["schedule"], made["cpu"]) == ("nightly", "0 3 * * *", 256)
    again = post(shop, "plan", _file({"nightly": NIGHTLY}))
    assert [c for c in again["changes"] if c["kind"] == "cron_job"] == []

    hourly = {**NIGHTLY, "schedule": "@hourly"}
    (update,) = [c for c in post(shop, "plan", _file({"nightly": hourly}))["changes"]]
    assert [(f["field"], f["before"], f["after"]) for f in update["fields"]] == [
        ("schedule", "0 3 * * *", "@hourly")
    ]
    assert update["monthly_usd_after"] > update["monthly_usd_before"]
    assert post(shop, "apply", _file({"nightly": hourly}))["applied"] is True
    assert shop.org.api.get(f"{shop.base}/cron_jobs/{made['id']}").json()["schedule"] == "@hourly"

    kept = post(shop, "plan", _file({}))
    assert {(a["kind"], a["name"]) for a in kept["left_alone"]} == {("cron_job", "nightly")}
    pruned = post(shop, "apply", _file({}), prune="true")
    assert pruned["applied"] is True
    assert shop.org.api.get(f"{shop.base}/cron_jobs").json()["cron_jobs"] == []
    bad = shop.org.api.post(
        f"{shop.base}/plan", json=_file({"x": {**NIGHTLY, "schedule": "0 3 * *"}})
    )
    assert bad.status_code == 400 and "cron_jobs.x.schedule" in bad.text
