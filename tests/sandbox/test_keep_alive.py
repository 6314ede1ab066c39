"""The sandbox keeps a client's HTTP/1.1 connection open between calls, as AWS does, frames each
answer by its length, reads what an app left of a request's body, and cuts every connection it
kept when it stops (`capstan_sandbox.cloud.keep_alive`)."""

from __future__ import annotations

import http.client
import socket
from collections.abc import Iterator
from contextlib import closing
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import EndpointConnectionError

from capstan_sandbox.cloud.keep_alive import KeepAliveServer
from capstan_sandbox.cloud.server import start_sandbox_cloud
from capstan_sandbox.cloud.stats import STATS_PATH
from tests.sandbox.wsgi_server import serving


def _app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    """Reads no request body; answers by path."""
    path = environ["PATH_INFO"]
    if path == "/fail":
        raise RuntimeError("the app failed")
    if path == "/empty":
        start_response("204 No Content", [])
        return []
    if path == "/object":
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "5")])
        return [b"" if environ["REQUEST_METHOD"] == "HEAD" else b"hello"]
    start_response("200 OK", [("Content-Type", "text/plain"), ("Connection", "close")])
    return [b"you asked for " + path.encode()]


@pytest.fixture
def served() -> Iterator[KeepAliveServer]:
    with serving(_app) as server:
        yield server


@pytest.fixture
def connection(served: KeepAliveServer) -> Iterator[http.client.HTTPConnection]:
    with closing(http.client.HTTPConnection("127.0.0.1", served.server_port, timeout=5)) as it:
        yield it


def _ask(
    connection: http.client.HTTPConnection, method: str, path: str, **kwargs: Any
) -> tuple[int, dict[str, str], bytes]:
    connection.request(method, path, **kwargs)
    answer = connection.getresponse()
    return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()


def test_calls_on_one_connection_are_each_answered_in_full(
    connection: http.client.HTTPConnection,
) -> None:
    _ask(connection, "GET", "/one")
    local = connection.sock.getsockname()
    # A body the app never reads is read past, so the next request line is the next request.
    status, headers, body = _ask(connection, "POST", "/two", body=b"x" * 70_000)
    assert (status, body) == (200, b"you asked for /two")
    # The length is the server's; the app's own `Connection: close` does not close it.
    assert headers["content-length"] == str(len(body)) and "connection" not in headers
    status, headers, body = _ask(connection, "HEAD", "/object")
    assert (status, headers["content-length"], body) == (200, "5", b"")
    assert _ask(connection, "GET", "/object")[2] == b"hello"
    status, headers, body = _ask(connection, "GET", "/empty")
    assert (status, body) == (204, b"") and "content-length" not in headers
    assert _ask(connection, "GET", "/fail")[0] == 500
    assert _ask(connection, "GET", "/three")[2] == b"you asked for /three"
    assert connection.sock is not None and connection.sock.getsockname() == local


def _raw(server: KeepAliveServer, request: bytes) -> bytes:
    """Sends `request` and reads until the server closes the connection."""
    with socket.create_connection(("127.0.0.1", server.server_port), timeout=5) as raw:
        raw.sendall(request)
        received = b""
        while chunk := raw.recv(65536):
            received += chunk
        return received


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GET /old HTTP/1.0\r\n\r\n",
        b"GET /asked HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        b"POST /chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"3\r\nabc\r\n0\r\n\r\n",
        b"POST /unframed HTTP/1.1\r\nHost: x\r\nContent-Length: many\r\n\r\n",
    ],
    ids=["http-1.0", "connection-close", "chunked-body", "bad-length"],
)
def test_a_request_it_cannot_keep_open_is_answered_and_closed(
    served: KeepAliveServer, request_bytes: bytes
) -> None:
    received = _raw(served, request_bytes)  # returns only because the server closed
    assert received.split(b"\r\n", 1)[0].endswith(b"200 OK"), received
    assert b"you asked for /" in received


def test_a_stopped_sandbox_answers_nothing_more_on_the_connections_its_clients_keep() -> None:
    sandbox = start_sandbox_cloud()
    client = boto3.client(
        "ecs",
        endpoint_url=sandbox.url,
        region_name="us-east-1",
        aws_access_key_id="keepalive",
        aws_secret_access_key="keepalive",
        config=Config(retries={"max_attempts": 1}),
    )
    kept = http.client.HTTPConnection(sandbox.url.removeprefix("http://"), timeout=5)
    with closing(kept), closing(client):
        try:
            client.list_clusters()
            client.list_clusters()
            assert _ask(kept, "GET", STATS_PATH)[0] == 200
            local = kept.sock.getsockname()
            assert _ask(kept, "GET", STATS_PATH)[0] == 200
            assert kept.sock.getsockname() == local  # the same connection, kept
        finally:
            sandbox.stop()
        # Sent on the kept connection: the stopped sandbox closed it (were it still served, the
        # call would be answered 200; were it reopened, refused).
        with pytest.raises((http.client.HTTPException, OSError)):
            _ask(kept, "GET", STATS_PATH)
        with pytest.raises(EndpointConnectionError):
            client.list_clusters()
