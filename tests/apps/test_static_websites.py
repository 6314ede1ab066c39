"""Static websites and their previews through HTTP against the sandbox: a site is built by
CodeBuild into its private bucket, served by CloudFront through an origin access control at its
own hostname and certificate, rebuilt on every change, and removed without leftovers."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from capstan.cloud.aws.cloudfront_functions import REQUEST_FUNCTION_CODE
from capstan.cloud.aws.inventory import capstan_resources, dns_records
from capstan.cloud.aws.session import AwsSession
from tests.apps.helpers import Ready, new_shop, served_at
from tests.apps.sites import (
    SITE_REPO,
    Site,
    account,
    create_site,
    deployments,
    distribution_of,
    read,
    running_site,
    served,
    site_bucket,
)
from tests.harness import Org
from tests.polling import wait_until


@pytest.fixture
def shop(connected: Org) -> Ready:
    """A new project of the shared organization."""
    return new_shop(connected)


@pytest.fixture(scope="module")
def published(connected: Org) -> Site:
    """One site, built and running, for the tests that only look at it."""
    return running_site(new_shop(connected))


def dns_record(operator: AwsSession, domain: str, hostname: str) -> dict[str, Any]:
    route53 = operator.client("route53")
    for zone in route53.list_hosted_zones()["HostedZones"]:
        if zone["Name"] != f"{domain}.":
            continue
        for record in route53.list_resource_record_sets(HostedZoneId=zone["Id"])[
            "ResourceRecordSets"
        ]:
            if record["Name"] == f"{hostname}." and record["Type"] == "A":
                return dict(record)
    raise AssertionError(f"no record of {hostname}")


def acm_exists(customer: AwsSession, arn: str) -> bool:
    try:
        customer.client("acm", region="us-east-1").describe_certificate(CertificateArn=arn)
    except customer.client("acm", region="us-east-1").exceptions.ResourceNotFoundException:
        return False
    return True


def test_a_new_site_is_deploying_at_its_hostname(shop: Ready) -> None:
    site = create_site(shop)
    hostname = f"docs.{shop.project['hostname_suffix']}.{shop.org.server.settings.domain}"
    assert site["status"] == "deploying"
    assert site["url"] == served_at(shop.org, hostname)
    assert (site["build_command"], site["publish_dir"], site["auto_deploy"]) == (
        "npm ci && npm run build",
        "dist",
        False,
    )
    assert "cpu" not in site and "memory" not in site


def test_the_build_output_alone_is_in_the_site_s_private_bucket(published: Site) -> None:
    (first,) = deployments(published.shop, published.path)
    bucket = published.bucket
    with account(published.shop) as (customer, _operator):
        s3 = customer.client("s3")
        keys = {item["Key"] for item in s3.list_objects_v2(Bucket=bucket)["Contents"]}
        # Under the build's own prefix (a rollback points the distribution back at one).
        prefix = first["id"]
        assert keys == {
            f"{prefix}/index.html",
            f"{prefix}/about/index.html",
            f"{prefix}/assets/site.css",
        }
        index = read(customer, bucket, f"{prefix}/index.html")
        assert served(customer, published.site["id"], "index.html") == index
        assert first["commit_sha"] in index and "${PUBLIC_GREETING}" in index
        blocked = s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"]
    assert all(blocked.values()), blocked


def test_cloudfront_serves_the_bucket_at_the_site_s_hostname(published: Site) -> None:
    site, hostname, bucket = published.site, published.hostname, published.bucket
    with account(published.shop) as (customer, _operator):
        # CloudFront serves the bucket through the OAC at the site's hostname.
        distribution = distribution_of(customer, site["id"])
        config = distribution["DistributionConfig"]
        assert distribution["Status"] == "Deployed" and config["Enabled"]
        assert config["Aliases"]["Items"] == [hostname]
        assert config["DefaultRootObject"] == "index.html"
        assert config["DefaultCacheBehavior"]["ViewerProtocolPolicy"] == "redirect-to-https"
        (origin,) = config["Origins"]["Items"]
        assert origin["DomainName"].startswith(f"{bucket}.s3.")
        assert origin["OriginAccessControlId"]
        certificate = config["ViewerCertificate"]["ACMCertificateArn"]
        assert certificate.split(":")[3] == "us-east-1"
        acm = customer.client("acm", region="us-east-1")
        described = acm.describe_certificate(CertificateArn=certificate)["Certificate"]
        # The project's wildcard certificate for its sites, not one per hostname.
        wildcard = "*." + hostname.split(".", 1)[1]
        assert (described["DomainName"], described["Status"]) == (wildcard, "ISSUED")


def test_the_sandbox_front_serves_the_site_at_its_hostname(published: Site) -> None:
    """The dev server plays CloudFront for the site's hostname, as it plays the load balancer for
    web servers: the index, a directory's index through the viewer function, a file by its
    type; a path the build did not write answers 403, as S3 behind an OAC does."""
    server = published.shop.org.server
    with account(published.shop) as (customer, _operator):
        index = served(customer, published.site["id"], "index.html")
        about = served(customer, published.site["id"], "about/index.html")
    with server.client(headers={"Host": published.hostname}) as front:
        root = front.get("/")
        assert (root.status_code, root.text) == (200, index)
        assert root.headers["content-type"].startswith("text/html")
        assert front.get("/about/").text == about
        assert front.get("/about").text == about
        css = front.get("/assets/site.css")
        assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
        assert front.get("/missing.html").status_code == 403
    other = f"nothing.{published.hostname}"
    with server.client(headers={"Host": other}) as front:
        assert front.get("/").status_code == 404


def test_viewer_requests_go_through_the_site_s_function(published: Site) -> None:
    site = published.site
    with account(published.shop) as (customer, _operator):
        config = distribution_of(customer, site["id"])["DistributionConfig"]
        # Directory indexes: the account's published function, shared by every site.
        (association,) = config["DefaultCacheBehavior"]["FunctionAssociations"]["Items"]
        assert association["EventType"] == "viewer-request"
        function_name = "capstan-site-index"
        assert association["FunctionARN"].endswith(f":function/{function_name}")
        cloudfront = customer.client("cloudfront", region="us-east-1")
        live = cloudfront.get_function(Name=function_name, Stage="LIVE")
        assert live["FunctionCode"].read().decode() == REQUEST_FUNCTION_CODE


def test_only_the_site_s_distribution_may_read_its_bucket(published: Site) -> None:
    with account(published.shop) as (customer, _operator):
        distribution = distribution_of(customer, published.site["id"])
        policy = customer.client("s3").get_bucket_policy(Bucket=published.bucket)["Policy"]
    (statement,) = json.loads(policy)["Statement"]
    assert statement["Principal"] == {"Service": "cloudfront.amazonaws.com"}
    assert statement["Action"] == "s3:GetObject"
    assert statement["Condition"] == {"StringEquals": {"AWS:SourceArn": distribution["ARN"]}}


def test_the_front_reads_only_what_the_bucket_lets_the_distribution_read(published: Site) -> None:
    """CloudFront reads the private bucket as `cloudfront.amazonaws.com` for its distribution:
    with the bucket policy naming another distribution, the site answers 403 (as S3 would
    refuse CloudFront), and 200 again with Capstan's policy back."""
    server = published.shop.org.server
    with account(published.shop) as (customer, _operator):
        s3 = customer.client("s3")
        kept = s3.get_bucket_policy(Bucket=published.bucket)["Policy"]
        elsewhere = json.loads(kept)
        condition = elsewhere["Statement"][0]["Condition"]["StringEquals"]
        condition["AWS:SourceArn"] = condition["AWS:SourceArn"].rsplit("/", 1)[0] + "/EOTHER"
        s3.put_bucket_policy(Bucket=published.bucket, Policy=json.dumps(elsewhere))
        try:
            with server.client(headers={"Host": published.hostname}) as front:
                assert front.get("/").status_code == 403
        finally:
            s3.put_bucket_policy(Bucket=published.bucket, Policy=kept)
    with server.client(headers={"Host": published.hostname}) as front:
        assert front.get("/").status_code == 200


def test_the_site_s_hostname_points_at_its_distribution(published: Site) -> None:
    domain = published.shop.org.server.settings.domain
    with account(published.shop) as (customer, operator):
        distribution = distribution_of(customer, published.site["id"])
        record = dns_record(operator, domain, published.hostname)
    assert record["AliasTarget"]["DNSName"].rstrip(".") == distribution["DomainName"]
    assert record["AliasTarget"]["HostedZoneId"] == "Z2FDTNDATAQYW2"


VARIABLES = [
    {"name": "PUBLIC_GREETING", "value": "Hello, reader"},
    {"name": "PUBLIC_FLAGS", "value": ""},  # no parameter holds an empty value
]


def rebuilt_twice(shop: Ready) -> Site:
    """PUT environment and PATCH of branch and publish dir, one right after the other: the
    second supersedes the first, whose build must not publish."""
    there = running_site(shop)
    api, path = shop.org.api, there.path
    put = api.put(f"{path}/environment", json={"environment": VARIABLES})
    assert put.status_code == 202 and put.json() == {"status": "deploying"}
    patched = api.patch(path, json={"branch": "feature-x", "publish_dir": "./dist/"})
    assert patched.status_code == 200 and patched.json()["status"] == "deploying"
    assert shop.wait_for(path, "running", timeout=30)["status"] == "running"
    return there


def test_an_environment_change_and_a_patch_each_rebuild_the_site(shop: Ready) -> None:
    there = rebuilt_twice(shop)
    site, path = there.site, there.path
    with account(shop) as (customer, _operator):
        # The build saw the variables (through SSM, never as values in the build's record),
        # and built the branch; the CDN cache was invalidated again.
        index = served(customer, site["id"], "index.html")
        history = deployments(shop, path)
        # On failure, say which release the distribution serves and where each deployment is.
        assert "Hello, reader" in index and "branch feature-x" in index, (
            distribution_of(customer, site["id"])["DistributionConfig"]["Origins"]["Items"][0][
                "OriginPath"
            ],
            [(d["id"], d["trigger"], d["status"]) for d in history],
        )
        assert [(d["trigger"], d["status"]) for d in history] == [
            ("patch", "running"),
            ("environment", "superseded"),
            ("create", "replaced"),
        ]
        codebuild = customer.client("codebuild")
        ids = codebuild.list_builds_for_project(projectName=f"capstan-{site['id']}")["ids"]
        build = max(codebuild.batch_get_builds(ids=ids)["builds"], key=lambda b: b["startTime"])
        given = {v["name"]: v for v in build["environment"]["environmentVariables"]}
        assert given["PUBLIC_GREETING"]["type"] == "PARAMETER_STORE"
        # The version of the environment the patch's release runs: the environment change's.
        version = history[1]["id"]
        assert (
            given["PUBLIC_GREETING"]["value"] == f"/capstan/{site['id']}/{version}/PUBLIC_GREETING"
        )
        assert "Hello, reader" not in str(build["environment"])
        assert given["PUBLIC_FLAGS"] == {"name": "PUBLIC_FLAGS", "value": "", "type": "PLAINTEXT"}
        cloudfront = customer.client("cloudfront", region="us-east-1")
        distribution = distribution_of(customer, site["id"])
        invalidations = cloudfront.list_invalidations(DistributionId=distribution["Id"])
        assert invalidations["InvalidationList"]["Quantity"] == 2


def test_logs_are_the_lines_of_the_most_recent_build(shop: Ready) -> None:
    there = rebuilt_twice(shop)
    lines = [line["message"] for line in shop.org.api.get(f"{there.path}/logs").json()["lines"]]
    assert "build-time variables: PUBLIC_FLAGS, PUBLIC_GREETING" in lines
    assert sum(line.startswith("Cloning ") for line in lines) == 1
    assert any(line.startswith("upload: dist/index.html") for line in lines)


def test_auto_deploy_alone_does_not_rebuild(shop: Ready) -> None:
    there = running_site(shop)
    quiet = shop.org.api.patch(there.path, json={"auto_deploy": True})
    assert quiet.json()["status"] == "running" and quiet.json()["auto_deploy"] is True
    assert [d["trigger"] for d in deployments(shop, there.path)] == ["create"]


def test_a_site_reports_metrics_and_cost(published: Site) -> None:
    api = published.shop.org.api
    # The edges report once a period after the distribution is deployed, which may come a tick
    # after the site is running.
    metrics = wait_until(
        lambda: (found := api.get(f"{published.path}/metrics").json())["requests_1h"] and found,
        timeout=30,
        what="the distribution's first data points",
    )
    assert set(metrics) == {
        "requests_1h",
        "bytes_transferred_1h",
        "error_rate_percent",
        "cache_hit_rate_percent",
        "series",
    }
    assert metrics["requests_1h"] > 0 and metrics["bytes_transferred_1h"] > 0
    assert 0 < metrics["cache_hit_rate_percent"] <= 100
    # The same window per 5 minutes: the counts add up to the hour's.
    series = metrics["series"]
    assert sum(p["value"] for p in series["requests_1h"]) == metrics["requests_1h"]
    sent = sum(p["value"] for p in series["bytes_transferred_1h"])
    assert sent == metrics["bytes_transferred_1h"]
    assert all(0 < p["value"] <= 100 for p in series["cache_hit_rate_percent"])
    cost = api.get(f"{published.path}/cost").json()
    assert cost["currency"] == "USD" and cost["spend_this_month_usd"] >= 0
    assert cost["monthly_run_rate_usd"] > 0


def test_a_new_hostname_suffix_moves_the_site(shop: Ready) -> None:
    there = running_site(shop)
    api, site, hostname = shop.org.api, there.site, there.hostname
    suffix, domain = shop.project["hostname_suffix"], shop.org.server.settings.domain
    with account(shop) as (customer, operator):
        config = distribution_of(customer, site["id"])["DistributionConfig"]
        certificate = config["ViewerCertificate"]["ACMCertificateArn"]
        # New certificate, alias and record; the old ones are removed.
        moved = shop.org.server.unique("moved")
        assert api.patch(shop.base, json={"hostname_suffix": moved}).status_code == 200
        new_hostname = f"docs.{moved}.{domain}"
        assert f"{hostname}." in dns_records(operator, domain, under=suffix)
        assert api.get(there.path).json()["url"] == served_at(shop.org, new_hostname)

        def moved_over() -> bool:
            config = distribution_of(customer, site["id"])["DistributionConfig"]
            return (
                config["Aliases"].get("Items") == [new_hostname]
                and not [
                    record
                    for record in dns_records(operator, domain, under=suffix)
                    if record.endswith(f"{hostname}.")  # its record and validation record
                ]
                and f"{new_hostname}." in dns_records(operator, domain, under=moved)
            )

        wait_until(moved_over, what="the site to move to its new hostname")
        wait_until(lambda: not acm_exists(customer, certificate), what="the old certificate to go")


UNBUILDABLE = [
    ({"branch": "broken-build"}, "Build failed: npm ERR! Missing script: build"),
    (
        {"publish_dir": "build"},
        "Build failed: error: the build did not produce publish_dir build",
    ),
]


@pytest.mark.parametrize(("fields", "reason"), UNBUILDABLE, ids=["broken-branch", "no-dist"])
def test_a_site_that_cannot_be_built_fails_with_the_reason(
    shop: Ready, fields: dict[str, str], reason: str
) -> None:
    failing = create_site(shop, name="broken", **fields)
    failing_path = f"{shop.base}/static_websites/{failing['id']}"
    assert shop.wait_for(failing_path, "failed", timeout=30)["status"] == "failed"
    (deployment,) = deployments(shop, failing_path)
    assert deployment["error"] == reason
    lines = [line["message"] for line in shop.org.api.get(f"{failing_path}/logs").json()["lines"]]
    assert reason.removeprefix("Build failed: ") in lines


@dataclass
class Previewed:
    """A site ("blog") and its preview of branch feature-x, both running; the preview was made
    while the site's environment held PUBLIC_GREETING, which was emptied afterwards."""

    shop: Ready
    site: dict[str, Any]
    path: str
    preview: dict[str, Any]
    preview_path: str
    preview_hostname: str


PARENT_VARIABLES = [{"name": "PUBLIC_GREETING", "value": "from the parent"}]


def start_preview(shop: Ready) -> Previewed:
    api = shop.org.api
    site = create_site(shop, name="blog")
    path = f"{shop.base}/static_websites/{site['id']}"
    put = api.put(f"{path}/environment", json={"environment": PARENT_VARIABLES})
    assert put.status_code == 202
    created = api.post(f"{path}/previews", json={"branch": "feature-x"})
    assert created.status_code == 201, created.text
    preview = created.json()
    hostname = f"blog-feature-x.{shop.project['hostname_suffix']}.{shop.org.server.settings.domain}"
    # The parent's environment changes after the preview was made: the preview keeps its own.
    assert api.put(f"{path}/environment", json={"environment": []}).status_code == 202
    return Previewed(shop, site, path, preview, f"{path}/previews/{preview['id']}", hostname)


def running_preview(shop: Ready) -> Previewed:
    there = start_preview(shop)
    for each in (there.path, there.preview_path):
        assert shop.wait_for(each, "running", timeout=30)["status"] == "running"
    return there


@pytest.fixture(scope="module")
def previewed(connected: Org) -> Previewed:
    """A running site and preview for the tests that only look at them."""
    return running_preview(new_shop(connected))


def test_a_preview_is_deploying_at_its_own_hostname(shop: Ready) -> None:
    there = start_preview(shop)
    assert there.preview["branch"] == "feature-x" and there.preview["status"] == "deploying"
    assert there.preview["url"] == served_at(shop.org, there.preview_hostname)


def test_bad_requests_are_refused_and_other_organizations_see_nothing(
    shop: Ready, other_org: Org
) -> None:
    site = create_site(shop, name="blog")
    check_bad_requests(shop, other_org, f"{shop.base}/static_websites/{site['id']}")


def test_a_preview_keeps_the_environment_it_was_built_with(previewed: Previewed) -> None:
    api, preview_path = previewed.shop.org.api, previewed.preview_path
    # A preview's environment: the build-time variables of its last build.
    assert api.get(f"{preview_path}/environment").json() == {"environment": PARENT_VARIABLES}
    lines = [line["message"] for line in api.get(f"{preview_path}/logs").json()["lines"]]
    assert "build-time variables: PUBLIC_GREETING" in lines
    with account(previewed.shop) as (customer, _operator):
        index = served(customer, previewed.preview["id"], "index.html")
    assert "branch feature-x" in index
    assert "from the parent" in index


def test_a_preview_has_metrics_but_no_cost(previewed: Previewed) -> None:
    api, preview_path = previewed.shop.org.api, previewed.preview_path
    metrics = api.get(f"{preview_path}/metrics").json()
    assert set(metrics) == {
        "requests_1h",
        "bytes_transferred_1h",
        "error_rate_percent",
        "cache_hit_rate_percent",
        "series",
    }
    assert api.get(f"{preview_path}/cost").status_code in (404, 405)


def test_a_preview_has_its_own_distribution_and_record(previewed: Previewed) -> None:
    shop, preview_hostname = previewed.shop, previewed.preview_hostname
    suffix, domain = shop.project["hostname_suffix"], shop.org.server.settings.domain
    with account(shop) as (customer, operator):
        preview_distribution = distribution_of(customer, previewed.preview["id"])
        aliases = preview_distribution["DistributionConfig"]["Aliases"]["Items"]
        assert aliases == [preview_hostname]
        assert distribution_of(customer, previewed.site["id"])["Id"] != preview_distribution["Id"]
        records = dns_records(operator, domain, under=suffix)
    served = sorted(record for record in records if not record.startswith("_"))
    assert served == sorted([f"blog.{suffix}.{domain}.", f"{preview_hostname}."])
    # ... and the validation record of the project's one certificate for its sites.
    assert len(records) == 3, records


def test_sites_need_no_project_network(previewed: Previewed) -> None:
    with account(previewed.shop) as (customer, _operator):
        kinds = {item.kind for item in capstan_resources(customer, previewed.shop.project["id"])}
    # The viewer function and origin access control are the account's, shared by all sites.
    assert {"s3 bucket", "cloudfront distribution", "acm certificate"} <= kinds
    # No VPC, no load balancer.
    assert not kinds & {"vpc", "load balancer", "ecs cluster"}, kinds


def test_deleting_a_preview_removes_its_resources(shop: Ready) -> None:
    there = running_preview(shop)
    api, preview_path, preview_hostname = shop.org.api, there.preview_path, there.preview_hostname
    suffix, domain = shop.project["hostname_suffix"], shop.org.server.settings.domain
    preview_bucket = site_bucket(there.preview["id"])
    # Its bucket, distribution, record and certificate go.
    assert api.delete(preview_path).status_code == 204
    assert api.get(preview_path).status_code == 404
    with account(shop) as (customer, operator):

        def preview_gone() -> bool:
            records = dns_records(operator, domain, under=suffix)
            return not bucket_exists(customer, preview_bucket) and not [
                r for r in records if r.endswith(f"{preview_hostname}.")
            ]

        wait_until(preview_gone, what="the preview's bucket and records to go")
        left = [
            item
            for item in capstan_resources(customer, shop.project["id"])
            if item.resource == there.preview["id"]
        ]
    assert left == []


def test_a_site_keeps_its_project_and_its_deletion_leaves_nothing(shop: Ready) -> None:
    there = running_preview(shop)
    api, project_id = shop.org.api, shop.project["id"]
    suffix, domain = shop.project["hostname_suffix"], shop.org.server.settings.domain
    refused = api.delete(shop.base)
    assert refused.status_code == 409 and refused.json()["error"] == "project_not_empty"
    assert "static websites" in refused.json()["message"]
    # Deleting the site (with its preview) removes everything of it.
    assert api.delete(there.path).status_code == 204
    assert api.get(there.path).status_code == 404
    shop.delete_project()
    with account(shop) as (customer, operator):
        assert capstan_resources(customer, project_id) == []
        assert dns_records(operator, domain, under=suffix) == []


def bucket_exists(customer: AwsSession, bucket: str) -> bool:
    names = {item["Name"] for item in customer.client("s3").list_buckets()["Buckets"]}
    return bucket in names


def check_bad_requests(shop: Ready, other_org: Org, path: str) -> None:
    """Refusals: missing and unknown fields, bad directories, reserved variables, a hostname
    another kind holds, and another organization's site (404)."""
    api = shop.org.api
    sites = f"{shop.base}/static_websites"
    body = {
        "name": "docs",
        "repo": SITE_REPO,
        "branch": "main",
        "build_command": "npm run build",
        "publish_dir": "dist",
    }
    for missing in ("name", "repo", "branch", "build_command", "publish_dir"):
        response = api.post(sites, json={k: v for k, v in body.items() if k != missing})
        assert response.status_code == 400, missing
        assert response.json()["error"] == "invalid_request"
    for wrong in ({"cpu": 256}, {"publish_dir": "../out"}, {"publish_dir": "/srv"}):
        assert api.post(sites, json=body | wrong).status_code == 400, wrong
    assert api.post(sites, json=body | {"repo": "someone/else"}).status_code == 400
    # A web server and a site share the project's hostnames: the site holds this one.
    web = {"name": "blog", "repo": "capstan-samples/hello-web", "branch": "main"}
    clash = api.post(f"{shop.base}/web_servers", json=web | {"cpu": 256, "memory": 512})
    assert clash.status_code == 409 and clash.json()["error"] == "hostname_taken"
    hostname = f"blog.{shop.project['hostname_suffix']}.{shop.org.server.settings.domain}"
    assert clash.json()["message"] == (
        f"The hostname {hostname} is taken: the static website 'blog' of this project serves it."
    )
    for change in ({"publish_dir": None}, {"build_command": ""}, {"cpu": 512}):
        assert api.patch(path, json=change).status_code == 400, change
    reserved = [{"name": "SITE_BUCKET", "value": "elsewhere"}]
    refused = api.put(f"{path}/environment", json={"environment": reserved})
    assert refused.status_code == 400 and refused.json()["error"] == "reserved_variable"
    assert api.post(f"{path}/previews", json={}).status_code == 400
    # Another organization sees none of it.
    for method, suffix in (
        ("GET", ""),
        ("PATCH", ""),
        ("DELETE", ""),
        ("POST", "/redeploy"),
        ("GET", "/logs"),
        ("GET", "/metrics"),
        ("GET", "/cost"),
        ("GET", "/environment"),
        ("POST", "/previews"),
    ):
        body_of = {"branch": "main"} if method in ("POST", "PATCH") else None
        response = other_org.api.request(method, f"{path}{suffix}", json=body_of)
        assert response.status_code == 404, (method, suffix, response.text)
    assert other_org.api.get(f"{sites}/svc_nope").status_code == 404
