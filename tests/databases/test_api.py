"""Databases through the HTTP API against the sandbox cloud, one behaviour a test: bad input,
creation and listing, isolation between organizations, the cloud's instance (private, encrypted,
protected, its password kept by RDS, its security group), changes, metrics, cost, a failure the
cloud reports, and deletion with and without the final snapshot."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from functools import partial
from typing import Any
from urllib.parse import parse_qs, urlsplit

from capstan.cloud.aws import names
from capstan.cloud.aws.inventory import capstan_resources
from capstan.cloud.aws.network import find_network
from capstan.cloud.aws.rds import instance_identifier
from capstan_sandbox.cloud import rds as sandbox_rds
from tests.apps.helpers import new_shop
from tests.buckets.helpers import account_admin
from tests.databases.helpers import cloud_instance, create_database, customer_of
from tests.harness import Org
from tests.metric_series import assert_oldest_first, past_stamps, put, value_at
from tests.polling import wait_until
from tests.spend import age_spend_answers, spend_cache

ENDPOINT = re.compile(r"^[a-z0-9.-]+\.rds\.amazonaws\.com:5432$")
wait = partial(wait_until, timeout=30)


def test_bad_database_bodies_are_refused(connected: Org) -> None:
    shop = new_shop(connected)
    databases = f"{shop.base}/databases"
    for body in (
        {},
        {"name": ""},
        {"name": "main", "engine": "mysql"},
        {"name": "main", "storage_gb": 19},
        {"name": "main", "storage_gb": "20"},
        {"name": "main", "backup_retention_days": 0},
        {"name": "main", "database_name": "1abc"},
        {"name": "main", "username": "App-User"},
        {"name": "main", "high_availability": "yes"},
        {"name": "main", "password": "hunter2"},
    ):
        refused = shop.org.api.post(databases, json=body)
        assert refused.status_code == 400, (body, refused.text)
        assert refused.json()["error"] == "invalid_request"
    unknown = shop.org.api.post(databases, json={"name": "main", "engine_version": "9.6"})
    assert unknown.status_code == 400, unknown.text
    assert unknown.json()["error"] == "unsupported_engine_version"
    assert "17" in unknown.json()["message"]
    for field, value in (
        ("username", "rdsadmin"),
        ("username", "user"),
        ("database_name", "order"),
    ):
        # RDS refuses PostgreSQL's reserved words as these names (so does the sandbox's RDS).
        reserved = shop.org.api.post(databases, json={"name": "main", field: value})
        assert reserved.status_code == 400 and reserved.json()["error"] == "reserved_name"
        assert reserved.json()["details"][0]["field"] == field
    assert shop.org.api.get(databases).json() == {"databases": []}


def test_a_new_database_is_creating_with_its_defaults(connected: Org) -> None:
    shop = new_shop(connected)
    database, path = create_database(shop)
    assert database["status"] == "creating"
    assert database["endpoint"] is None
    assert {key: database[key] for key in DEFAULTS} == DEFAULTS
    assert connected.api.get(path).json() == database
    taken = connected.api.post(f"{shop.base}/databases", json={"name": "main"})
    assert taken.status_code == 409 and taken.json()["error"] == "database_name_taken"


DEFAULTS = {
    "name": "main",
    "engine": "postgres",
    "engine_version": "17",
    "database_name": "app",
    "username": "app",
    "storage_gb": 20,
    "high_availability": False,
    "backup_retention_days": 7,
}


def test_databases_are_listed_and_keep_their_project(connected: Org) -> None:
    org = connected
    shop = new_shop(org)
    _first, path = create_database(shop, name="main")
    _second, second_path = create_database(shop, name="reports", engine_version="15")
    listed = org.api.get(f"{shop.base}/databases").json()["databases"]
    assert listed == [org.api.get(path).json(), org.api.get(second_path).json()]
    deleted = org.api.delete(shop.base)
    assert deleted.status_code == 409, deleted.text
    assert "databases: 2" in deleted.json()["message"]


def test_another_organization_sees_no_database(connected: Org, other_org: Org) -> None:
    shop = new_shop(connected)
    database, _path = create_database(shop)
    own = other_org.api.post(
        "/api/projects", json={"name": "Other", "hostname_suffix": other_org.server.unique("o")}
    )
    assert own.status_code == 201, own.text
    for base in (shop.base, f"/api/projects/{own.json()['id']}"):
        path = f"{base}/databases/{database['id']}"
        for method, suffix, body in (
            ("GET", "", None),
            ("PATCH", "", {"storage_gb": 40}),
            ("DELETE", "", None),
            ("GET", "/metrics", None),
            ("GET", "/cost", None),
        ):
            answer = other_org.api.request(method, f"{path}{suffix}", json=body)
            assert answer.status_code == 404, (method, path, suffix, answer.text)
            assert answer.json()["error"] == "not_found"
    assert other_org.api.get(f"{shop.base}/databases").status_code == 404
    assert connected.api.get(f"{shop.base}/databases/{database['id']}").json()["status"] in (
        "creating",
        "available",
    )


def test_an_available_database_is_private_postgres_in_the_project_network(
    connected: Org,
) -> None:
    shop = new_shop(connected)
    database, path = create_database(shop, name="orders", database_name="orders")
    available = shop.wait_for(path, "available")
    assert ENDPOINT.match(available["endpoint"]), available
    with customer_of(connected) as customer:
        found = cloud_instance(customer, database["id"])
        assert found["Engine"] == "postgres" and found["EngineVersion"] == "17"
        assert found["DBName"] == "orders" and found["MasterUsername"] == "app"
        assert found["PubliclyAccessible"] is False
        assert found["StorageEncrypted"] is True
        assert found["DeletionProtection"] is True
        assert found["BackupRetentionPeriod"] == 7
        assert found["MultiAZ"] is False
        # RDS keeps the password; Capstan's API never shows one.
        assert found["MasterUserSecret"]["SecretArn"].split(":secret:")[1].startswith("rds!")
        assert "password" not in json.dumps(available).lower()
        tags = {t["Key"]: t["Value"] for t in found["TagList"]}
        assert tags == names.tag_map(shop.project["id"], database["id"])
        project = find_network(customer, shop.project["id"])
        assert project is not None
        subnets = [s["SubnetIdentifier"] for s in found["DBSubnetGroup"]["Subnets"]]
        assert sorted(subnets) == sorted(project.subnet_ids)
        [membership] = found["VpcSecurityGroups"]
        [group] = customer.client("ec2").describe_security_groups(
            GroupIds=[membership["VpcSecurityGroupId"]]
        )["SecurityGroups"]
    assert group["VpcId"] == project.vpc_id
    assert [
        (rule["IpProtocol"], rule["FromPort"], rule["ToPort"], rule.get("IpRanges"))
        for rule in group["IpPermissions"]
    ] == [("tcp", 5432, 5432, [])]
    [pair] = group["IpPermissions"][0]["UserIdGroupPairs"]
    assert pair["GroupId"] == project.services_group_id


def test_a_database_grows_changes_and_never_shrinks(connected: Org) -> None:
    org = connected
    shop = new_shop(org)
    database, path = create_database(shop, storage_gb=30)
    shop.wait_for(path, "available")
    changed = org.api.patch(
        path, json={"storage_gb": 50, "high_availability": True, "backup_retention_days": 14}
    )
    assert changed.status_code == 200, changed.text
    assert changed.json()["status"] == "modifying"
    settled = shop.wait_for(path, "available")
    assert (settled["storage_gb"], settled["high_availability"]) == (50, True)
    with customer_of(org) as customer:
        found = cloud_instance(customer, database["id"])
    assert (found["AllocatedStorage"], found["MultiAZ"], found["BackupRetentionPeriod"]) == (
        50,
        True,
        14,
    )
    smaller = org.api.patch(path, json={"storage_gb": 40})
    assert smaller.status_code == 400, smaller.text
    assert smaller.json()["error"] == "database_storage_shrink_unsupported"
    renamed = org.api.patch(path, json={"name": "primary"})
    assert renamed.status_code == 200 and renamed.json()["status"] == "available", renamed.text
    assert renamed.json()["name"] == "primary"


def test_a_database_reports_metrics_and_cost(connected: Org) -> None:
    shop = new_shop(connected)
    database, path = create_database(shop, storage_gb=100, high_availability=True)
    shop.wait_for(path, "available")
    api = shop.org.api
    # Data points of the past hour, each in its own 5-minute period, come back in `series`.
    stamps = past_stamps()
    dimensions = {"DBInstanceIdentifier": instance_identifier(database["id"])}
    with account_admin(connected, shop.project["region"]) as admin:
        cloudwatch = admin.client("cloudwatch")
        for name, values in {
            "CPUUtilization": [(stamp, 10.0 * (k + 1)) for k, stamp in enumerate(stamps)],
            # Two in a period: the series keeps the most connections at once.
            "DatabaseConnections": [(stamp, 3.0 + k) for k, stamp in enumerate(stamps)]
            + [(stamp + timedelta(seconds=30), 1.0) for stamp in stamps],
            "WriteIOPS": [(stamp, 5.0 * k) for k, stamp in enumerate(stamps)],
        }.items():
            put(cloudwatch, "AWS/RDS", dimensions, name, values)

    def metrics() -> dict[str, Any] | None:
        answer = api.get(f"{path}/metrics")
        assert answer.status_code == 200, answer.text
        body = dict(answer.json())
        # The past hour's points above hold no free storage: wait for the instance's own.
        return body if body["free_storage_bytes"] > 0 else None

    figures = wait(metrics, what="CloudWatch data points of the database")
    assert set(figures) == {
        "cpu_percent",
        "connections",
        "free_storage_bytes",
        "read_iops",
        "write_iops",
        "period_seconds",
        "series",
    }
    series = figures["series"]
    assert set(series) == set(figures) - {"period_seconds", "series"}
    assert_oldest_first(series)
    for k, stamp in enumerate(stamps):
        assert value_at(series["cpu_percent"], stamp) == 10 * (k + 1)
        assert value_at(series["connections"], stamp) == 3 + k
        assert value_at(series["write_iops"], stamp) == 5 * k
    assert figures["connections"] == max(point["value"] for point in series["connections"])
    assert figures["period_seconds"] == 3600
    assert 0 < figures["cpu_percent"] <= 100
    assert 0 < figures["free_storage_bytes"] <= 100 * 1024**3

    def cost() -> dict[str, Any] | None:
        age_spend_answers(shop.org.server, spend_cache(shop.org.server).seconds)
        answer = api.get(f"{path}/cost")
        assert answer.status_code == 200, answer.text
        body = dict(answer.json())
        return body if body["month_to_date_usd"] > 0 else None

    spent = wait(cost, what="month-to-date cost of the database")
    assert spent["currency"] == "USD"
    # Multi-AZ: twice (730 h of db.t4g.micro at $0.016 + 100 GB of gp3 at $0.115).
    assert spent["estimated_monthly_usd"] == 46.36
    assert spent["month_to_date_usd"] < 0.01
    link = urlsplit(spent["cost_explorer_url"])
    report = parse_qs(urlsplit(link.fragment).query)
    [row] = json.loads(report["filter"][0])
    assert [value["value"] for value in row["values"]] == [database["id"]]


def test_a_database_the_cloud_cannot_create_is_failed(connected: Org) -> None:
    shop = new_shop(connected)
    database, path = create_database(shop)
    sandbox_rds.fail_databases(database["id"])
    try:
        failed = shop.wait_for(path, "failed")
    finally:
        sandbox_rds.heal_databases(database["id"])
    assert failed["error"] and failed["endpoint"] is None
    refused = connected.api.patch(path, json={"storage_gb": 40})
    assert refused.status_code == 409 and refused.json()["error"] == "database_not_modifiable"
    # A failed database can still be deleted.
    assert connected.api.delete(f"{path}?skip_final_snapshot=true").status_code == 200
    wait(lambda: connected.api.get(path).status_code == 404, what="the failed database to go")


def test_deleting_keeps_a_final_snapshot_unless_told_not_to(connected: Org) -> None:
    org = connected
    shop = new_shop(org)
    kept, kept_path = create_database(shop, name="kept")
    dropped, dropped_path = create_database(shop, name="dropped")
    shop.wait_for(kept_path, "available")
    shop.wait_for(dropped_path, "available")
    gone = org.api.delete(kept_path)
    assert gone.status_code == 200, gone.text
    assert gone.json() == {"id": kept["id"], "status": "deleting"}
    assert org.api.get(kept_path).json()["status"] == "deleting"
    late = org.api.patch(kept_path, json={"storage_gb": 40})
    assert late.status_code in (404, 409), late.text
    assert org.api.delete(f"{dropped_path}?skip_final_snapshot=true").status_code == 200
    for path in (kept_path, dropped_path):
        wait(lambda path=path: org.api.get(path).status_code == 404, what="the database to go")
    # The project's network goes with its last user; then the project can go.
    shop.delete_project()
    # The instances, subnet groups and security groups are gone with the project; only the
    # final snapshot of the first stays (the leftovers check lists it), tagged with its database.
    with customer_of(org) as customer:
        left = capstan_resources(customer, shop.project["id"])
    assert {
        (item.kind, item.resource) for item in left if not item.kind.startswith("tagging:")
    } == {("db snapshot", kept["id"])}
    assert dropped["id"] not in {item.resource for item in left}


def test_a_database_needs_a_connected_cloud_account(org: Org) -> None:
    project = org.api.post(
        "/api/projects", json={"name": "Bare", "hostname_suffix": org.server.unique("bare")}
    ).json()
    refused = org.api.post(f"/api/projects/{project['id']}/databases", json={"name": "main"})
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"] == "cloud_account_not_connected"
