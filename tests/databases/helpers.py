"""What database tests share: a database made through the API and its instance in the account."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.apps.helpers import Ready
from tests.apps.processes import account_sessions
from tests.harness import Org


@contextmanager
def customer_of(org: Org) -> Iterator[Any]:
    """The organization's sandbox account, as its administrator."""
    account_id = org.api.get("/api/cloud_account").json()["account_id"]
    sandbox_url = org.server.settings.sandbox_cloud_url
    assert sandbox_url
    with account_sessions(sandbox_url, account_id) as (customer, _operator):
        yield customer


def create_database(shop: Ready, **fields: Any) -> tuple[dict[str, Any], str]:
    body = {"name": "main", **fields}
    created = shop.org.api.post(f"{shop.base}/databases", json=body)
    assert created.status_code == 201, created.text
    database = dict(created.json())
    return database, f"{shop.base}/databases/{database['id']}"


def cloud_instance(customer: Any, database_id: str) -> dict[str, Any]:
    identifier = f"capstan-{database_id.replace('_', '')}"
    found = customer.client("rds").describe_db_instances(DBInstanceIdentifier=identifier)
    return dict(found["DBInstances"][0])
