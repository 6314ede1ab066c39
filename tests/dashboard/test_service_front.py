"""In the sandbox, a web server's hostname answers with the deployment that serves it, found by
following DNS, the load balancer's host rule, the target group and the ECS service."""

from __future__ import annotations

from capstan.cloud.aws.session import Endpoint
from tests.apps.helpers import ready
from tests.harness import Org
from tests.sandbox.aws import calls, calls_since


def test_a_running_web_server_answers_at_its_hostname(org: Org) -> None:
    shop = ready(org)
    web = shop.create_web_server()
    path = f"{shop.base}/web_servers/{web['id']}"
    # A value no id, name or commit can contain (ids are lowercase base32, commits hex).
    secret = "Never-Shown_VALUE"
    org.api.put(f"{path}/environment", json={"environment": [{"name": "SECRET", "value": secret}]})
    shop.wait_for(path, "running")
    newest = org.api.get(f"{path}/deployments").json()["deployments"][0]
    host = f"web.{shop.project['hostname_suffix']}.{org.server.settings.domain}"
    with org.server.client() as visitor:
        page = visitor.get("/", headers={"Host": f"{host}:8000"})
    assert page.status_code == 200, page.text
    assert newest["id"] in page.text
    assert newest["commit_sha"] in page.text
    assert "<code>SECRET</code>" in page.text and "<code>PORT</code>" in page.text
    assert secret not in page.text  # names only, never values
    # Again: the account found the first time is looked in first, the organization's others (a
    # role to assume and a listing each; the whole suite makes hundreds) not even listed.
    sandbox = Endpoint(region="us-east-1", url=org.server.settings.sandbox_cloud_url)
    before = calls(sandbox)
    with org.server.client() as visitor:
        again = visitor.get("/", headers={"Host": host})
    assert again.status_code == 200 and newest["id"] in again.text
    assert "organizations:ListAccounts" not in calls_since(sandbox, before)


def test_a_hostname_nothing_serves_is_404(org: Org) -> None:
    host = f"nothing.nowhere.{org.server.settings.domain}"
    with org.server.client() as visitor:
        page = visitor.get("/", headers={"Host": host})
    assert page.status_code == 404
    assert "No DNS record" in page.text
