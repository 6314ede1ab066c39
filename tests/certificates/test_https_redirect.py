"""With the project's certificate issued, its load balancer redirects HTTP to HTTPS and holds one
rule per web server, on the HTTPS listener: a plain HTTP request to a web server's hostname is
answered by the sandbox's front, playing the load balancer from ELB's own listener and rule
model, with a 301 to the same host, path and query over HTTPS, where the web server answers.

The rules are counted through ELB's API against a quota of as many rules as web servers: two
rules a web server (one per listener, as before) would not fit, and the move from HTTP to HTTPS
never needs room for more than one extra."""

from __future__ import annotations

from capstan.cloud.aws.session import Endpoint
from capstan.dev.front import Answering, Redirect, answering
from capstan_sandbox.cloud import quotas
from tests.apps.helpers import new_shop
from tests.apps.processes import wait_all_running
from tests.certificates.helpers import (
    cloud_of,
    listeners,
    project_when,
    redirects,
    request_certificate,
    rules_by_port,
    wait_until,
)
from tests.harness import Org


def test_http_redirects_to_https_where_each_web_server_has_its_one_rule(connected: Org) -> None:
    org = connected
    shop = new_shop(org)
    project_id, domain = shop.project["id"], org.server.settings.domain
    hosts = [f"{name}.{shop.project['hostname_suffix']}.{domain}" for name in ("api", "web")]
    with quotas.changed(rules_per_load_balancer=2):
        paths = [
            f"{shop.base}/web_servers/{shop.create_web_server(name=name)['id']}"
            for name in ("api", "web")
        ]
        wait_all_running(org.api, paths, timeout=90)
        request_certificate(shop)
        project_when(shop, "issued")
        with cloud_of(org) as (customer, operator):
            wait_until(
                lambda: rules_by_port(customer, project_id) == {80: [], 443: [[h] for h in hosts]},
                "each web server's one rule on the HTTPS listener",
            )
            assert redirects(customer, project_id)
            counted = sum(
                not rule["IsDefault"]
                for listener in listeners(customer, project_id).values()
                for rule in customer.client("elbv2").describe_rules(
                    ListenerArn=listener["ListenerArn"]
                )["Rules"]
            )
            assert counted == len(paths)
            assert all(org.api.get(path).json()["status"] == "running" for path in paths)

            # Over HTTP: the front answers as the listener says, a redirect.
            with org.server.client() as visitor:
                page = visitor.get("/orders/7?view=full&x=1", headers={"Host": hosts[1]})
            assert page.status_code == 301, page.text
            assert page.headers["location"] == f"https://{hosts[1]}/orders/7?view=full&x=1"

            # Over HTTPS (a request the dev server cannot receive): the web server answers.
            endpoint = Endpoint(region="us-east-1", url=org.server.settings.sandbox_cloud_url)
            for host in hosts:
                found = answering(endpoint, operator, domain, host, "/", scheme="https")
                assert isinstance(found, Answering), found
                assert answering(endpoint, operator, domain, host, "/") == Redirect(
                    301, f"https://{host}/"
                )
