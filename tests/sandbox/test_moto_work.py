"""The moto work the sandbox leaves undone (`moto_work`) changes no answer: the same actions are
actions, templates parse to the same documents, and EC2 has no stock images."""

from __future__ import annotations

import json
import os
from typing import Any

import moto
import moto.backends
import moto.core.responses
import pytest
import yaml
from moto.cloudformation.models import Stack
from moto.cloudformation.responses import CloudFormationResponse
from moto.cloudformation.utils import yaml_tag_constructor
from moto.core.utils import method_names_from_class
from moto.ec2.responses import EC2Response
from moto.ecs.responses import EC2ContainerServiceResponse
from moto.s3.responses import S3Response

from capstan.cloud.access_role import role_template
from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.dev.accounts import organization_access
from capstan_sandbox.cloud import moto_work
from tests.sandbox.aws import new_account


def _yaml(template: str) -> Any:
    """What moto's own parser makes of `template` (YAML first)."""
    yaml.add_multi_constructor("", yaml_tag_constructor)
    return yaml.load(template, Loader=yaml.Loader)


@pytest.mark.usefixtures("endpoint")  # the sandbox, so its extensions are installed
@pytest.mark.parametrize(
    "response", [CloudFormationResponse, EC2Response, EC2ContainerServiceResponse, S3Response]
)
def test_an_action_is_one_exactly_when_moto_lists_it(response: type) -> None:
    actions = getattr(moto.core.responses, "method_names_from_class")(response)  # noqa: B009
    assert isinstance(actions, moto_work._Actions)
    listed = set(method_names_from_class(response))  # moto's listing, every function
    for name in {*dir(response), "no_such_action", "__init__", "", "dispatch"}:
        assert (name in actions) == (name in listed), name


def test_an_action_added_later_is_one() -> None:
    class Later(CloudFormationResponse):
        pass

    actions = moto_work._Actions(Later)
    assert "describe_magic" not in actions
    Later.describe_magic = lambda self: "magic"  # type: ignore[attr-defined]
    assert "describe_magic" in actions


@pytest.mark.usefixtures("endpoint")
def test_a_json_template_parses_to_what_moto_makes_of_it() -> None:
    template = role_template(
        principal_arn="arn:aws:iam::123456789012:role/capstan", external_id="e-1"
    )
    text = json.dumps(template)
    assert Stack.parse_template(text) == _yaml(text) == template
    indented = json.dumps({"A": [1, 2.5, None, True, "x\u00e9\n"], "B": {}}, indent=2)
    assert Stack.parse_template(indented) == _yaml(indented)


@pytest.mark.usefixtures("endpoint")
@pytest.mark.parametrize(
    "template",
    [
        "Resources:\n  Topic:\n    Type: AWS::SNS::Topic\n    Properties:\n"
        "      TopicName: !Ref Name\n",
        "{Resources: {Topic: {Type: 'AWS::SNS::Topic'}}}",  # a YAML flow mapping, not JSON
        '  ["a list", "not a mapping"]',
    ],
)
def test_a_template_that_is_not_a_json_object_goes_to_moto(template: str) -> None:
    assert Stack.parse_template(template) == _yaml(template)


def test_a_new_account_has_no_stock_machine_images(endpoint: Endpoint) -> None:
    session: AwsSession
    with organization_access(endpoint, new_account(endpoint, "images")) as session:
        ec2 = session.client("ec2")
        assert ec2.describe_vpcs()["Vpcs"]  # its EC2 is made (moto's default network)
        assert ec2.describe_images(Owners=["amazon"])["Images"] == []


@pytest.mark.usefixtures("endpoint")
def test_the_service_names_are_moto_s_own_modules() -> None:
    package = os.path.dirname(moto.__file__)
    listed = sorted(
        name
        for name in os.listdir(package)
        if os.path.isdir(os.path.join(package, name)) and not name.startswith("__")
    )
    assert list(moto.backends.list_of_moto_modules()) == listed
    assert "ec2" in moto.backends.list_of_moto_modules()
