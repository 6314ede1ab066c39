from __future__ import annotations

import pytest

from capstan.cloud.aws.session import Endpoint


@pytest.fixture(scope="session")
def endpoint(sandbox_cloud_url: str | None) -> Endpoint:
    assert sandbox_cloud_url
    return Endpoint(region="us-east-1", url=sandbox_cloud_url)
