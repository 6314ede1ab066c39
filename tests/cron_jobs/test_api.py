"""Cron jobs through the HTTP API against the sandbox: a job fires on its schedule within a
minute of the scheduler's clock and its runs are its history; run now; a run still going when
the next is due is skipped, saying so; disable; delete; 400 for bad schedules; the 409s; another
organization's ids are 404."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from capstan import cron
from capstan.cloud.aws import names
from capstan_sandbox.cloud.simulator import schedules
from tests.apps.helpers import Ready, new_shop, simulator_knobs
from tests.buckets.helpers import account_admin
from tests.harness import Org
from tests.polling import wait_until
from tests.sandbox.aws import iam_propagated, refusal


@pytest.fixture(autouse=True)
def quick_tasks() -> Iterator[None]:
    with simulator_knobs(task_start_seconds=0):
        yield


@pytest.fixture
def shop(connected: Org) -> Ready:
    return new_shop(connected)


def _live_web_server(shop: Ready) -> dict[str, Any]:
    created = shop.create_web_server()
    shop.wait_for(f"{shop.base}/web_servers/{created['id']}", "running")
    return created


def _job(shop: Ready, service_id: str, **fields: Any) -> dict[str, Any]:
    body = {"name": "nightly", "schedule": "0 3 * * *", "command": "echo nightly"}
    answer = shop.org.api.post(
        f"{shop.base}/cron_jobs", json={**body, "service_id": service_id, **fields}
    )
    assert answer.status_code == 201, answer.text
    return dict(answer.json())


def _until_due(schedule: str) -> None:
    """Move the scheduler's clock just past the schedule's next time."""
    now = schedules.now()
    schedules.advance((cron.parse(schedule).next_run(now) - now).total_seconds() + 1)


def _runs(shop: Ready, path: str) -> list[dict[str, Any]]:
    answer = shop.org.api.get(f"{path}/runs")
    assert answer.status_code == 200, answer.text
    return list(answer.json()["runs"])


def _nth_run(shop: Ready, path: str, count: int) -> list[dict[str, Any]]:
    def found() -> list[dict[str, Any]] | None:
        runs = _runs(shop, path)
        return runs if len(runs) >= count else None

    return wait_until(found, what=f"the job's run {count}")


def _state(shop: Ready, job_id: str) -> str:
    """The job's schedule's state in the sandbox: ENABLED or DISABLED."""
    with account_admin(shop.org, shop.project["region"]) as admin:
        found = admin.client("scheduler").get_schedule(
            Name=names.schedule_name(job_id),
            GroupName=names.schedule_group_name(shop.project["id"]),
        )
    return str(found["State"])


def _ended(shop: Ready, path: str, run_id: str) -> dict[str, Any]:
    def ended() -> dict[str, Any] | None:
        run = next(item for item in _runs(shop, path) if item["id"] == run_id)
        return run if run["status"] in ("succeeded", "failed") else None

    return wait_until(ended, what=f"run {run_id} to end")


def test_a_nightly_job_fires_on_schedule_runs_now_skips_overlaps_and_goes(shop: Ready) -> None:
    service = _live_web_server(shop)
    job = _job(shop, service["id"])
    assert (job["enabled"], job["cpu"], job["memory"]) == (True, 256, 512)  # the service's
    assert job["next_run_at"] is not None and job["next_run_at"][11:16] == "03:00"
    path = f"{shop.base}/cron_jobs/{job['id']}"
    assert shop.wait_for(path, "scheduled")["error"] is None

    iam_propagated()  # the project's new scheduler role, before the schedule relies on it
    _until_due("0 3 * * *")
    [fired] = _nth_run(shop, path, 1)
    assert fired["trigger"] == "schedule"
    done = _ended(shop, path, fired["id"])
    assert (done["status"], done["exit_code"]) == ("succeeded", 0)
    logs = shop.org.api.get(f"{path}/runs/{fired['id']}/logs").json()["lines"]
    assert [line["message"] for line in logs] == ["nightly"]
    assert shop.org.api.get(path).json()["last_run"]["id"] == fired["id"]
    # The schedule's runs are runs of the service too.
    service_runs = _runs(shop, f"{shop.base}/web_servers/{service['id']}")
    assert fired["id"] in [run["id"] for run in service_runs]

    now = shop.org.api.post(f"{path}/runs")
    assert now.status_code == 201, now.text
    assert now.json()["trigger"] == "manual"
    assert _ended(shop, path, now.json()["id"])["status"] == "succeeded"

    # A run still going when the next one is due: the schedule is paused (DISABLED) while it
    # goes, so Scheduler starts no second task; it is enabled again once the run has ended.
    changed = shop.org.api.patch(path, json={"command": "echo long; sleep 600"})
    assert changed.status_code == 200, changed.text
    assert changed.json()["status"] == "pending"
    shop.wait_for(path, "scheduled")
    _until_due("0 3 * * *")
    long = _nth_run(shop, path, 3)[0]
    wait_until(lambda: _state(shop, job["id"]) == "DISABLED" or None, what="the schedule paused")
    _until_due("0 3 * * *")  # due while `long` goes
    stop = shop.org.api.post(f"{shop.base}/web_servers/{service['id']}/runs/{long['id']}/stop")
    assert stop.status_code == 202, stop.text
    _ended(shop, path, long["id"])
    wait_until(lambda: _state(shop, job["id"]) == "ENABLED" or None, what="the schedule on again")
    assert len(_runs(shop, path)) == 3  # nothing started beside `long`

    # The service and the project cannot go while the job runs in them.
    refused = shop.org.api.delete(f"{shop.base}/web_servers/{service['id']}")
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"] == "service_in_use" and "nightly" in refused.json()["message"]
    kept = shop.org.api.delete(shop.base)
    assert kept.status_code == 409, kept.text
    assert "cron jobs" in kept.text

    disabled = shop.org.api.patch(path, json={"enabled": False})
    assert disabled.status_code == 200, disabled.text
    assert disabled.json()["next_run_at"] is None
    shop.wait_for(path, "disabled")
    assert shop.org.api.delete(path).status_code == 204
    assert shop.org.api.get(path).status_code == 404
    wait_until(
        lambda: (
            shop.org.api.delete(f"{shop.base}/web_servers/{service['id']}").status_code == 204
            or None
        )
    )

    # The project goes with its schedule group and its scheduler role.
    shop.delete_project()
    with account_admin(shop.org, shop.project["region"]) as admin:
        group = names.schedule_group_name(shop.project["id"])
        gone = refusal(admin.client("scheduler").get_schedule_group, Name=group)
        assert gone["Code"] == "ResourceNotFoundException"
        role = names.scheduler_role_name(shop.project["id"])
        assert refusal(admin.client("iam").get_role, RoleName=role)["Code"] == "NoSuchEntity"


def test_bad_schedules_and_services_are_refused(shop: Ready, other_org: Org) -> None:
    service = shop.create_web_server()
    jobs = f"{shop.base}/cron_jobs"
    for schedule, part in (("0 24 * * *", "hour"), ("* * *", ""), ("@yearly", "")):
        answer = shop.org.api.post(
            jobs,
            json={
                "name": "a",
                "schedule": schedule,
                "command": "true",
                "service_id": service["id"],
            },
        )
        assert answer.status_code == 400, answer.text
        assert "schedule" in answer.text and part in answer.json()["message"]
    missing = shop.org.api.post(
        jobs, json={"name": "a", "schedule": "@daily", "command": "true", "service_id": "svc_none"}
    )
    assert missing.status_code == 404, missing.text
    bad_size = shop.org.api.post(
        jobs,
        json={
            "name": "a",
            "schedule": "@daily",
            "command": "true",
            "service_id": service["id"],
            "cpu": 256,
            "memory": 8192,
        },
    )
    assert bad_size.status_code == 400, bad_size.text
    job = _job(shop, service["id"], schedule="@hourly", enabled=False)
    assert (job["status"], job["next_run_at"]) == ("pending", None)
    shop.wait_for(f"{jobs}/{job['id']}", "waiting")
    again = shop.org.api.post(
        jobs,
        json={"name": "nightly", "schedule": "@daily", "command": "x", "service_id": service["id"]},
    )
    assert again.status_code == 409 and again.json()["error"] == "name_taken"
    path = f"{jobs}/{job['id']}"
    bad_patch = shop.org.api.patch(path, json={"schedule": "61 * * * *"})
    assert bad_patch.status_code == 400 and "minute" in bad_patch.json()["message"]
    early = shop.org.api.post(f"{path}/runs")
    assert early.status_code == 409 and early.json()["error"] == "no_live_release"
    # Another organization's ids are 404.
    for answer in (
        other_org.api.get(jobs),
        other_org.api.get(path),
        other_org.api.patch(path, json={"enabled": True}),
        other_org.api.get(f"{path}/runs"),
        other_org.api.post(f"{path}/runs"),
        other_org.api.get(f"{path}/runs/run_x/logs"),
        other_org.api.delete(path),
    ):
        assert answer.status_code == 404, answer.text
    listed = shop.org.api.get(jobs).json()["cron_jobs"]
    assert [item["id"] for item in listed] == [job["id"]]
    assert shop.org.api.delete(path).status_code == 204
