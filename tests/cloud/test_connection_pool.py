"""A client shared by every thread of the cloud keeps a connection for each call it runs at once
(`session.CLOUD_THREADS`): none is opened for one call and dropped after it, which against AWS
is a TLS handshake each time."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from capstan.cloud.aws.session import CLOUD_THREADS, AwsSession, Credentials, Endpoint
from tests.sandbox.wsgi_server import serving

AT_ONCE = 20  # more than botocore's default pool of 10, at most CLOUD_THREADS
assert 10 < AT_ONCE <= CLOUD_THREADS


class _Endpoint:
    """An ECS endpoint that answers every call with an empty cluster list, slowly enough that
    calls sent together overlap, and notes the client port of each call's connection."""

    def __init__(self) -> None:
        self.ports: list[int] = []
        self.url = ""
        self.lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Any) -> list[bytes]:
        with self.lock:
            self.ports.append(int(environ["REMOTE_PORT"]))
        time.sleep(0.05)
        start_response("200 OK", [("Content-Type", "application/x-amz-json-1.1")])
        return [b'{"clusterArns": []}']


@pytest.fixture
def ecs() -> Iterator[_Endpoint]:
    app = _Endpoint()
    with serving(app) as server:
        app.url = f"http://127.0.0.1:{server.server_port}"
        yield app


def test_calls_at_once_reuse_the_connections_of_the_calls_before_them(ecs: _Endpoint) -> None:
    session = AwsSession(Endpoint(region="us-east-1", url=ecs.url), Credentials("AKIDPOOL", "x"))
    with session, ThreadPoolExecutor(AT_ONCE) as threads:
        client = session.client("ecs")
        for _wave in range(3):
            list(threads.map(lambda _: client.list_clusters(), range(AT_ONCE)))
    assert len(ecs.ports) == 3 * AT_ONCE
    # Each connection the first wave opened served the later waves: with a pool of 10, the
    # connections beyond the tenth were dropped after each call and opened again.
    assert len(set(ecs.ports)) <= AT_ONCE, len(set(ecs.ports))
