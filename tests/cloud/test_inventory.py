"""The inventory of Capstan's tagged resources, run while deletions are under way (as `make
aws-smoke` polls it): an item listed and deleted before its tags are read is gone, not an error."""

from __future__ import annotations

import json

from capstan.cloud.aws import inventory, names
from capstan.cloud.aws.session import Endpoint
from capstan.dev.accounts import organization_access
from tests.sandbox.aws import new_account

TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": "ecs-tasks.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }
    ],
}


def test_a_role_deleted_between_the_listing_and_its_tags_is_not_listed(endpoint: Endpoint) -> None:
    account = new_account(endpoint, "inventory")
    with organization_access(endpoint, account) as customer:
        iam = customer.client("iam")
        for name in ("capstan-first", "capstan-second"):
            iam.create_role(
                RoleName=name,
                Path=names.ROLE_PATH,
                AssumeRolePolicyDocument=json.dumps(TRUST),
                Tags=[{"Key": names.PROJECT_TAG, "Value": "prj_inventory"}],
            )
        roles = inventory._iam(customer)
        first = next(roles)  # the page holding both is read; the first one's tags too
        other = ({"capstan-first", "capstan-second"} - {first.id}).pop()
        iam.delete_role(RoleName=other)  # deleted before its tags are asked for
        assert [first.id, *(found.id for found in roles)] == [first.id]
        assert [found.id for found in inventory.capstan_resources(customer)] == [first.id]
