"""A WSGI app served by the sandbox's HTTP server (`KeepAliveServer`) in a thread of the test."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from capstan_sandbox.cloud.keep_alive import KeepAliveServer


@contextmanager
def serving(app: Any) -> Iterator[KeepAliveServer]:
    """`app` on a free loopback port until the block ends; then the server and every
    connection it kept are closed."""
    server = KeepAliveServer("127.0.0.1", 0, app)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
