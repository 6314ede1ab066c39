"""capstan.yaml with a monorepo: `root_dir`, `dockerfile_path` and `watch_paths` are planned and
applied as the API takes them, an applied file plans nothing, and a change of `watch_paths`
alone updates without a deployment."""

from __future__ import annotations

import copy
from typing import Any

from tests.apps.helpers import new_shop
from tests.harness import Org
from tests.plans.helpers import post

MONOREPO = "capstan-samples/hello-monorepo"
FILE: dict[str, Any] = {
    "web_servers": {
        "api": {
            "repo": MONOREPO,
            "branch": "main",
            "cpu": 256,
            "memory": 512,
            "root_dir": "services/api",
            "watch_paths": ["services/api/**"],
        }
    },
    "workers": {
        "jobs": {
            "repo": MONOREPO,
            "branch": "main",
            "start_command": "python worker.py",
            "cpu": 256,
            "memory": 512,
            "root_dir": "services",
            "dockerfile_path": "jobs/Dockerfile",
        }
    },
    "static_websites": {
        "site": {
            "repo": MONOREPO,
            "branch": "main",
            "build_command": "npm ci && npm run build",
            "publish_dir": "dist",
            "root_dir": "site",
        }
    },
}


def test_a_monorepo_file_applies_and_plans_its_source_settings(connected: Org) -> None:
    shop = new_shop(connected)
    planned = post(shop, "plan", FILE)
    fields = {(c["name"], f["field"]): f["after"] for c in planned["changes"] for f in c["fields"]}
    assert fields[("api", "root_dir")] == "services/api"
    assert fields[("api", "dockerfile_path")] == "Dockerfile"
    assert fields[("jobs", "dockerfile_path")] == "jobs/Dockerfile"
    assert fields[("site", "root_dir")] == "site"
    assert post(shop, "apply", FILE)["applied"] is True
    api = shop.org.api
    [web] = api.get(f"{shop.base}/web_servers").json()["web_servers"]
    assert (web["root_dir"], web["watch_paths"]) == ("services/api", ["services/api/**"])
    [worker] = api.get(f"{shop.base}/workers").json()["workers"]
    assert (worker["root_dir"], worker["dockerfile_path"]) == ("services", "jobs/Dockerfile")
    assert post(shop, "plan", FILE)["no_changes"] is True

    changed = copy.deepcopy(FILE)
    changed["web_servers"]["api"]["watch_paths"] = ["services/api/**", "shared/**"]
    [change] = post(shop, "plan", changed)["changes"]
    assert change["fields"] == [
        {
            "field": "watch_paths",
            "before": ["services/api/**"],
            "after": ["services/api/**", "shared/**"],
        }
    ]
    result = post(shop, "apply", changed)
    assert result["applied"] is True and result["deployments"] == []


def test_a_path_leaving_the_repository_fails_the_plan_by_field(connected: Org) -> None:
    shop = new_shop(connected)
    bad = copy.deepcopy(FILE)
    bad["workers"]["jobs"]["root_dir"] = "../other"
    answer = shop.org.api.post(f"{shop.base}/plan", json=bad)
    assert answer.status_code == 400, answer.text
    assert "workers.jobs.root_dir" in answer.text
