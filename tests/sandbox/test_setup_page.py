"""The sandbox's stand-in for the CloudFormation quick-create page, through HTTP."""

from __future__ import annotations

from capstan.cloud.aws.session import Endpoint
from capstan.dev.accounts import organization_access
from tests.harness import Org, http_client
from tests.sandbox.aws import account_named


def test_the_page_explains_and_posts_back(org: Org) -> None:
    setup_url = org.api.get("/api/cloud_account").json()["setup_url"]
    with http_client(timeout=30) as console:
        page = console.get(setup_url)
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    path_and_query = setup_url.removeprefix(org.server.base_url)
    assert f'action="{path_and_query}"' in page.text


def test_launching_creates_the_api_template_in_the_organizations_account(
    org: Org, other_org: Org, endpoint: Endpoint
) -> None:
    setup_url = org.api.get("/api/cloud_account").json()["setup_url"]
    with http_client(timeout=60) as console:
        first = console.post(setup_url)
        again = console.post(setup_url)
    assert first.status_code == 200, first.text
    assert again.json() == first.json()
    account_id = first.json()["account_id"]
    assert account_named(endpoint, f"customer-{org.organization_id}") == account_id

    with organization_access(endpoint, account_id) as admin:
        cloudformation = admin.client("cloudformation")
        [stack] = cloudformation.describe_stacks(StackName="capstan-access")["Stacks"]
        body = cloudformation.get_template(StackName="capstan-access")["TemplateBody"]
        role = admin.client("iam").get_role(RoleName="CapstanAccess")["Role"]
    assert stack["StackStatus"] == "CREATE_COMPLETE"
    assert body == org.api.get("/api/cloud_account/template").json()
    trust = role["AssumeRolePolicyDocument"]["Statement"][0]
    assert trust["Condition"] == {
        "StringEquals": {"sts:ExternalId": org.api.get("/api/cloud_account").json()["external_id"]}
    }

    other_url = other_org.api.get("/api/cloud_account").json()["setup_url"]
    with http_client(timeout=60) as console:
        theirs = console.post(other_url)
    assert theirs.status_code == 200
    assert theirs.json()["account_id"] != account_id


def test_an_unknown_external_id_is_404(org: Org) -> None:
    with http_client(base_url=org.server.base_url, timeout=30) as console:
        response = console.post("/sandbox/cloud/setup", params={"external_id": "nobody-has-this"})
        missing = console.post("/sandbox/cloud/setup")
    assert response.status_code == 404
    assert response.json()["error"] == "not_found"
    assert missing.status_code == 400
