"""Static websites within a fresh account's limits: a certificate per project (its wildcard), not
per hostname, so a long site name deploys where ACM refuses its hostname as a certificate's name;
a suffix too long for ACM is refused (and, on a project made before that, fails the site with
what to do); and one origin access control and one viewer function serve every site of the
account."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from botocore.exceptions import ClientError
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.projects.models import Project
from capstan_sandbox.cloud import quotas
from tests.apps.helpers import Ready, ready
from tests.apps.sites import account, create_site
from tests.harness import Org, run_db

LONG_NAME = "the-documentation-of-our-product-in-full"  # 40 characters, the longest name


def site_path(shop: Ready, site: dict[str, object]) -> str:
    return f"{shop.base}/static_websites/{site['id']}"


def test_a_hostname_over_64_characters_deploys_under_the_project_s_certificate(org: Org) -> None:
    shop = ready(org)
    hostname = f"{LONG_NAME}.{shop.project['hostname_suffix']}.{org.server.settings.domain}"
    assert len(hostname) > 64
    path = site_path(shop, create_site(shop, name=LONG_NAME))
    assert shop.wait_for(path, "running", "failed", timeout=60)["status"] == "running"
    with account(shop) as (customer, _operator):
        acm = customer.client("acm", region="us-east-1")
        domains = [item["DomainName"] for item in acm.list_certificates()["CertificateSummaryList"]]
        assert f"*.{hostname.split('.', 1)[1]}" in domains
        # A certificate for the hostname itself, as each site had before, ACM refuses.
        with pytest.raises(ClientError) as refused:
            acm.request_certificate(DomainName=hostname, ValidationMethod="DNS")
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert "cannot exceed 64 octets" in refused.value.response["Error"]["Message"]


def test_a_suffix_too_long_for_acm_fails_the_site_until_it_is_shortened(org: Org) -> None:
    shop = ready(org)
    domain = org.server.settings.domain
    long_suffix = org.server.unique("s" * 45)
    wildcard_chars = len(f"*.{long_suffix}.{domain}")
    assert wildcard_chars > 64
    patched = org.api.patch(shop.base, json={"hostname_suffix": long_suffix})
    assert patched.status_code == 400, patched.text
    assert patched.json()["details"][0]["field"] == "hostname_suffix"

    # A project whose suffix was chosen before suffixes were measured.
    async def lengthen(session: AsyncSession) -> None:
        project = await session.get(Project, shop.project["id"])
        assert project is not None
        project.hostname_suffix = long_suffix
        await session.commit()

    run_db(org.server.settings, lengthen)
    path = site_path(shop, create_site(shop))
    assert shop.wait_for(path, "running", "failed", timeout=60)["status"] == "failed"
    (deployment,) = org.api.get(f"{path}/deployments").json()["deployments"]
    longest = 64 - len(f"*..{domain}")
    assert deployment["error"] == (
        f"The project's static websites need a certificate for *.{long_suffix}.{domain}, which "
        f"is {wildcard_chars} characters long; AWS Certificate Manager allows at most 64. Choose "
        f"a hostname suffix of at most {longest} characters for this project, then redeploy."
    )

    patched = org.api.patch(shop.base, json={"hostname_suffix": org.server.unique("docs")})
    assert patched.status_code == 200, patched.text
    assert org.api.post(f"{path}/redeploy").status_code == 202
    assert shop.wait_for(path, "running", "failed", timeout=60)["status"] == "running"


@pytest.fixture
def one_of_each() -> Iterator[None]:
    """An account that holds one origin access control and one function (AWS: 100 each)."""
    with quotas.changed(cloudfront_origin_access_controls=1, cloudfront_functions=1):
        yield


def test_sites_and_previews_share_one_origin_access_control_and_one_function(
    org: Org, one_of_each: None
) -> None:
    shop = ready(org)
    paths = [site_path(shop, create_site(shop, name=name)) for name in ("docs", "blog")]
    created = org.api.post(f"{paths[0]}/previews", json={"branch": "feature-x"})
    assert created.status_code == 201, created.text
    paths.append(f"{paths[0]}/previews/{created.json()['id']}")
    for path in paths:
        assert shop.wait_for(path, "running", "failed", timeout=60)["status"] == "running"
    with account(shop) as (customer, _operator):
        cloudfront = customer.client("cloudfront", region="us-east-1")
        controls = cloudfront.list_origin_access_controls()["OriginAccessControlList"]["Items"]
        functions = cloudfront.list_functions(Stage="DEVELOPMENT")["FunctionList"]["Items"]
        assert [item["Name"] for item in controls] == ["capstan-sites"]
        assert [item["Name"] for item in functions] == ["capstan-site-index"]
        # A site's own, as each had before, the account's quota refuses.
        with pytest.raises(ClientError) as refused:
            cloudfront.create_origin_access_control(
                OriginAccessControlConfig={
                    "Name": "capstan-another",
                    "SigningProtocol": "sigv4",
                    "SigningBehavior": "always",
                    "OriginAccessControlOriginType": "s3",
                }
            )
        assert refused.value.response["Error"]["Code"] == "TooManyOriginAccessControls"
        with pytest.raises(ClientError) as refused:
            cloudfront.create_function(
                Name="capstan-another",
                FunctionConfig={"Comment": "", "Runtime": "cloudfront-js-2.0"},
                FunctionCode=b"function handler(event) { return event.request; }",
            )
        assert refused.value.response["Error"]["Code"] == "TooManyFunctions"
