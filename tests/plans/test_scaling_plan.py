"""capstan.yaml's scaling and architecture: planned as changes with their dollar delta (the cost
endpoint's, before and after), applied in place for scaling and by a deployment for arm64."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import yaml

from tests.apps.helpers import new_shop
from tests.cli.helpers import Cli
from tests.harness import Org
from tests.plans.helpers import FILE, post


def test_scaling_and_arm64_plan_with_their_delta_and_apply(connected: Org) -> None:
    shop = new_shop(connected)
    small = {"web_servers": FILE["web_servers"]}
    post(shop, "apply", small)
    [web] = shop.org.api.get(f"{shop.base}/web_servers").json()["web_servers"]
    cost_path = f"{shop.base}/web_servers/{web['id']}/cost"
    rate_before = shop.org.api.get(cost_path).json()["monthly_run_rate_usd"]

    wanted = copy.deepcopy(small)
    scaling = {"min_instances": 2, "max_instances": 6, "target_cpu_percent": 50}
    wanted["web_servers"]["api"].update(architecture="arm64", scaling=scaling)
    planned = post(shop, "plan", wanted)
    [change] = planned["changes"]
    assert change["fields"] == [
        {
            "field": "scaling",
            "before": {
                "min_instances": 1,
                "max_instances": 4,
                "target_cpu_percent": 60,
                "target_requests_per_instance": None,
            },
            "after": {**scaling, "target_requests_per_instance": None},
        },
        {"field": "architecture", "before": "x86_64", "after": "arm64"},
    ]
    # Two tasks at the least, each 20 % cheaper on ARM.
    assert abs(change["monthly_usd_after"] - rate_before * 2 * 0.8) <= 0.01
    assert planned["monthly_run_rate_usd"]["delta"] > 0

    result = post(shop, "apply", wanted)
    assert [d["name"] for d in result["deployments"]] == ["api"]
    applied = shop.org.api.get(f"{shop.base}/web_servers/{web['id']}").json()
    assert applied["architecture"] == "arm64"
    assert applied["scaling"]["min_instances"] == 2
    rate_after = shop.org.api.get(cost_path).json()["monthly_run_rate_usd"]
    assert change["monthly_usd_after"] == rate_after
    assert post(shop, "plan", wanted)["no_changes"] is True


def test_init_writes_scaling_and_architecture_that_plan_no_changes(
    connected: Org, tmp_path: Path
) -> None:
    shop = new_shop(connected)
    wanted = {"web_servers": copy.deepcopy(FILE["web_servers"])}
    wanted["web_servers"]["api"].update(
        architecture="arm64", scaling={"min_instances": 2, "max_instances": 5}
    )
    post(shop, "apply", wanted)
    cli = Cli(tmp_path / "config", url=connected.server.base_url, token=connected.token)
    assert cli.run("use", shop.project["hostname_suffix"]).exit_code == 0
    path = tmp_path / "init.yaml"
    assert cli.run("init", "-f", str(path)).exit_code == 0
    written = yaml.safe_load(path.read_text())["web_servers"]["api"]
    assert written["architecture"] == "arm64"
    assert written["scaling"] == {"min_instances": 2, "max_instances": 5, "target_cpu_percent": 60}
    planned = cli.json("plan", "-f", str(path))
    assert planned["no_changes"] is True, json.dumps(planned["changes"])
