from __future__ import annotations

import pytest

from capstan.cloud.aws.session import Endpoint
from capstan.dev.operator import bootstrap_control_plane


@pytest.fixture(scope="session")
def endpoint(sandbox_cloud_url: str | None) -> Endpoint:
    """The sandbox cloud, with the control plane's identity in it (as a Capstan server would
    have made it), so tests do not depend on a server having started before them."""
    assert sandbox_cloud_url
    endpoint = Endpoint(region="us-east-1", url=sandbox_cloud_url)
    bootstrap_control_plane(endpoint)
    return endpoint
