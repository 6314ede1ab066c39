"""Static websites and their previews through HTTP against the sandbox: a site is built by
CodeBuild into its private bucket, served by CloudFront through an origin access control at its
own hostname and certificate, rebuilt on every change, and removed without leftovers."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import pytest

from capstan.cloud.aws.cloudfront import REQUEST_FUNCTION_CODE
from capstan.cloud.aws.session import AwsSession
from capstan.sandbox.cloud.inventory import capstan_resources, dns_records
from tests.apps.helpers import Ready, ready
from tests.apps.processes import account_sessions
from tests.harness import Org

SITE_REPO = "capstan-samples/hello-static"
T = TypeVar("T")


@pytest.fixture
def shop(org: Org) -> Ready:
    return ready(org)


def create_site(shop: Ready, **fields: Any) -> dict[str, Any]:
    body = {
        "name": "docs",
        "repo": SITE_REPO,
        "branch": "main",
        "build_command": "npm ci && npm run build",
        "publish_dir": "dist",
    }
    body.update(fields)
    response = shop.org.api.post(f"{shop.base}/static_websites", json=body)
    assert response.status_code == 201, response.text
    return dict(response.json())


@contextmanager
def account(shop: Ready) -> Iterator[tuple[AwsSession, AwsSession]]:
    account_id = shop.org.api.get("/api/cloud_account").json()["account_id"]
    sandbox_url = shop.org.server.settings.sandbox_cloud_url
    assert sandbox_url
    with account_sessions(sandbox_url, account_id) as sessions:
        yield sessions


def eventually(check: Callable[[], T | None], *, timeout: float = 20, what: str = "") -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s: {what}")
        time.sleep(0.1)


def read(customer: AwsSession, bucket: str, key: str) -> str:
    return str(customer.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read().decode())


def site_bucket(resource_id: str) -> str:
    return "capstan-site-" + resource_id.lower().replace("_", "-")


def distribution_of(customer: AwsSession, resource_id: str) -> dict[str, Any]:
    cloudfront = customer.client("cloudfront", region="us-east-1")
    for item in cloudfront.list_distributions()["DistributionList"].get("Items") or []:
        if item["Comment"] == f"Capstan {resource_id}":
            return dict(cloudfront.get_distribution(Id=item["Id"])["Distribution"])
    raise AssertionError(f"no distribution of {resource_id}")


def deployments(shop: Ready, path: str) -> list[dict[str, Any]]:
    return list(shop.org.api.get(f"{path}/deployments").json()["deployments"])


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


def test_a_site_is_built_published_and_rebuilt(shop: Ready) -> None:
    api = shop.org.api
    suffix = shop.project["hostname_suffix"]
    domain = shop.org.server.settings.domain
    hostname = f"docs.{suffix}.{domain}"
    site = create_site(shop)
    # Two that cannot be built, meanwhile: a broken branch, and a publish directory the build
    # does not produce.
    broken = create_site(shop, name="broken", branch="broken-build")
    nodist = create_site(shop, name="nodist", publish_dir="build")
    assert site["status"] == "deploying"
    assert site["url"] == f"https://{hostname}"
    assert (site["build_command"], site["publish_dir"], site["auto_deploy"]) == (
        "npm ci && npm run build",
        "dist",
        False,
    )
    assert "cpu" not in site and "memory" not in site
    path = f"{shop.base}/static_websites/{site['id']}"
    assert shop.wait_for(path, "running", timeout=30)["status"] == "running"
    (first,) = deployments(shop, path)
    bucket = site_bucket(site["id"])

    with account(shop) as (customer, operator):
        s3 = customer.client("s3")
        # The build's output, and only it, is in the bucket; the bucket is private.
        keys = {item["Key"] for item in s3.list_objects_v2(Bucket=bucket)["Contents"]}
        assert keys == {"index.html", "about/index.html", "assets/site.css"}
        index = read(customer, bucket, "index.html")
        assert first["commit_sha"] in index and "${PUBLIC_GREETING}" in index
        blocked = s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"]
        assert all(blocked.values()), blocked
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
        # Viewer requests go through the site's published function (directory indexes).
        (association,) = config["DefaultCacheBehavior"]["FunctionAssociations"]["Items"]
        assert association["EventType"] == "viewer-request"
        function_name = f"capstan-{site['id']}"
        assert association["FunctionARN"].endswith(f":function/{function_name}")
        cloudfront = customer.client("cloudfront", region="us-east-1")
        live = cloudfront.get_function(Name=function_name, Stage="LIVE")
        assert live["FunctionCode"].read().decode() == REQUEST_FUNCTION_CODE
        acm = customer.client("acm", region="us-east-1")
        described = acm.describe_certificate(CertificateArn=certificate)["Certificate"]
        assert (described["DomainName"], described["Status"]) == (hostname, "ISSUED")
        # Only that distribution may read the bucket.
        policy = s3.get_bucket_policy(Bucket=bucket)["Policy"]
        (statement,) = json.loads(policy)["Statement"]
        assert statement["Principal"] == {"Service": "cloudfront.amazonaws.com"}
        assert statement["Action"] == "s3:GetObject"
        assert statement["Condition"] == {"StringEquals": {"AWS:SourceArn": distribution["ARN"]}}
        # The hostname points at the distribution.
        record = dns_record(operator, domain, hostname)
        assert record["AliasTarget"]["DNSName"].rstrip(".") == distribution["DomainName"]
        assert record["AliasTarget"]["HostedZoneId"] == "Z2FDTNDATAQYW2"

        # PUT environment and PATCH of branch and publish dir each rebuild (one right after the
        # other: the second supersedes the first, whose build must not publish).
        variables = [
            {"name": "PUBLIC_GREETING", "value": "Hello, reader"},
            {"name": "PUBLIC_FLAGS", "value": ""},  # no parameter holds an empty value
        ]
        put = api.put(f"{path}/environment", json={"environment": variables})
        assert put.status_code == 202 and put.json() == {"status": "deploying"}
        patched = api.patch(path, json={"branch": "feature-x", "publish_dir": "./dist/"})
        assert patched.status_code == 200 and patched.json()["status"] == "deploying"
        assert shop.wait_for(path, "running", timeout=30)["status"] == "running"
        # The build saw the variables (through SSM, never as values in the build's record),
        # and built the branch; the CDN cache was invalidated again.
        index = read(customer, bucket, "index.html")
        assert "Hello, reader" in index and "branch feature-x" in index
        assert [(d["trigger"], d["status"]) for d in deployments(shop, path)] == [
            ("patch", "running"),
            ("environment", "superseded"),
            ("create", "running"),
        ]
        codebuild = customer.client("codebuild")
        ids = codebuild.list_builds_for_project(projectName=f"capstan-{site['id']}")["ids"]
        build = max(codebuild.batch_get_builds(ids=ids)["builds"], key=lambda b: b["startTime"])
        given = {v["name"]: v for v in build["environment"]["environmentVariables"]}
        assert given["PUBLIC_GREETING"]["type"] == "PARAMETER_STORE"
        assert given["PUBLIC_GREETING"]["value"] == f"/capstan/{site['id']}/PUBLIC_GREETING"
        assert "Hello, reader" not in str(build["environment"])
        assert given["PUBLIC_FLAGS"] == {"name": "PUBLIC_FLAGS", "value": "", "type": "PLAINTEXT"}
        invalidations = cloudfront.list_invalidations(DistributionId=distribution["Id"])
        assert invalidations["InvalidationList"]["Quantity"] == 2

        # Logs are the lines of the most recent build.
        lines = [line["message"] for line in api.get(f"{path}/logs").json()["lines"]]
        assert "build-time variables: PUBLIC_FLAGS, PUBLIC_GREETING" in lines
        assert sum(line.startswith("Cloning ") for line in lines) == 1
        assert any(line.startswith("upload: dist/index.html") for line in lines)

        # auto_deploy alone does not rebuild.
        quiet = api.patch(path, json={"auto_deploy": True})
        assert quiet.json()["status"] == "running" and quiet.json()["auto_deploy"] is True
        assert [d["trigger"] for d in deployments(shop, path)] == ["patch", "environment", "create"]

        metrics = api.get(f"{path}/metrics").json()
        assert set(metrics) == {
            "requests_1h",
            "bytes_transferred_1h",
            "error_rate_percent",
            "cache_hit_rate_percent",
        }
        assert metrics["requests_1h"] > 0 and metrics["bytes_transferred_1h"] > 0
        assert 0 < metrics["cache_hit_rate_percent"] <= 100
        cost = api.get(f"{path}/cost").json()
        assert cost["currency"] == "USD" and cost["spend_this_month_usd"] >= 0
        assert cost["monthly_run_rate_usd"] > 0

        # A new hostname suffix moves the site: new certificate, alias and record; the old
        # ones are removed.
        moved = shop.org.server.unique("moved")
        assert api.patch(shop.base, json={"hostname_suffix": moved}).status_code == 200
        new_hostname = f"docs.{moved}.{domain}"
        assert f"{hostname}." in dns_records(operator, domain, under=suffix)
        assert api.get(path).json()["url"] == f"https://{new_hostname}"

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

        eventually(moved_over, what="the site to move to its new hostname")
        eventually(lambda: not acm_exists(customer, certificate), what="the old certificate to go")

    # The builds that could not succeed failed, with the reason.
    for failing, reason in (
        (broken, "Build failed: npm ERR! Missing script: build"),
        (nodist, "Build failed: error: the build did not produce publish_dir build"),
    ):
        failing_path = f"{shop.base}/static_websites/{failing['id']}"
        assert shop.wait_for(failing_path, "failed", timeout=30)["status"] == "failed"
        (deployment,) = deployments(shop, failing_path)
        assert deployment["error"] == reason
        lines = [line["message"] for line in api.get(f"{failing_path}/logs").json()["lines"]]
        assert reason.removeprefix("Build failed: ") in lines


def test_previews_bad_requests_and_deletion_leaving_nothing(shop: Ready, other_org: Org) -> None:
    api = shop.org.api
    suffix = shop.project["hostname_suffix"]
    domain = shop.org.server.settings.domain
    project_id = shop.project["id"]
    site = create_site(shop, name="blog")
    path = f"{shop.base}/static_websites/{site['id']}"
    variables = [{"name": "PUBLIC_GREETING", "value": "from the parent"}]
    assert api.put(f"{path}/environment", json={"environment": variables}).status_code == 202
    created = api.post(f"{path}/previews", json={"branch": "feature-x"})
    assert created.status_code == 201, created.text
    preview = created.json()
    assert preview["branch"] == "feature-x" and preview["status"] == "deploying"
    preview_hostname = f"blog-feature-x.{suffix}.{domain}"
    assert preview["url"] == f"https://{preview_hostname}"
    preview_path = f"{path}/previews/{preview['id']}"
    # The parent's environment changes after the preview was made: the preview keeps its own.
    assert api.put(f"{path}/environment", json={"environment": []}).status_code == 202
    check_bad_requests(shop, other_org, path)
    for each in (path, preview_path):
        assert shop.wait_for(each, "running", timeout=30)["status"] == "running"
    # A preview's environment: the build-time variables of its last build.
    assert api.get(f"{preview_path}/environment").json() == {"environment": variables}
    lines = [line["message"] for line in api.get(f"{preview_path}/logs").json()["lines"]]
    assert "build-time variables: PUBLIC_GREETING" in lines
    metrics = api.get(f"{preview_path}/metrics").json()
    assert set(metrics) == {
        "requests_1h",
        "bytes_transferred_1h",
        "error_rate_percent",
        "cache_hit_rate_percent",
    }
    assert api.get(f"{preview_path}/cost").status_code in (404, 405)

    with account(shop) as (customer, operator):
        # The preview has its own bucket, distribution and record.
        preview_bucket = site_bucket(preview["id"])
        assert "branch feature-x" in read(customer, preview_bucket, "index.html")
        assert "from the parent" in read(customer, preview_bucket, "index.html")
        preview_distribution = distribution_of(customer, preview["id"])
        aliases = preview_distribution["DistributionConfig"]["Aliases"]["Items"]
        assert aliases == [preview_hostname]
        assert distribution_of(customer, site["id"])["Id"] != preview_distribution["Id"]
        records = dns_records(operator, domain, under=suffix)
        served = sorted(record for record in records if not record.startswith("_"))
        assert served == sorted([f"blog.{suffix}.{domain}.", f"{preview_hostname}."])
        # ... and the certificates' validation records.
        assert len(records) == 4, records
        kinds = {item.kind for item in capstan_resources(customer, project_id)}
        assert {
            "s3 bucket",
            "cloudfront distribution",
            "cloudfront function",
            "origin access control",
        } <= kinds
        # A site needs no project network: no VPC, no load balancer.
        assert not kinds & {"vpc", "load balancer", "ecs cluster"}, kinds

        # Deleting the preview removes its bucket, distribution, record and certificate.
        assert api.delete(preview_path).status_code == 204
        assert api.get(preview_path).status_code == 404

        def preview_gone() -> bool:
            records = dns_records(operator, domain, under=suffix)
            return not bucket_exists(customer, preview_bucket) and not [
                r for r in records if r.endswith(f"{preview_hostname}.")
            ]

        eventually(preview_gone, what="the preview's bucket and records to go")
        left = [i for i in capstan_resources(customer, project_id) if i.resource == preview["id"]]
        assert left == []
        # The project cannot be deleted while the site exists.
        refused = api.delete(shop.base)
        assert refused.status_code == 409 and refused.json()["error"] == "project_not_empty"
        assert "static websites" in refused.json()["message"]

        # Deleting the site removes everything of it.
        assert api.delete(path).status_code == 204
        assert api.get(path).status_code == 404
        eventually(
            lambda: api.delete(shop.base).status_code == 204, what="the project to be deletable"
        )
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
    # A web server and a site share the project's hostnames.
    web = {"name": "blog", "repo": "capstan-samples/hello-web", "branch": "main"}
    clash = api.post(f"{shop.base}/web_servers", json=web | {"cpu": 256, "memory": 512})
    assert clash.status_code == 409 and clash.json()["error"] == "name_taken"
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
