"""The sandbox cloud: a moto server on a loopback port, inside this process, with the sandbox's
extensions installed (see the package docstring).

moto keeps its state per process, in memory: every sandbox started in one process shares it, and
it is gone when the process ends.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

from moto.server import ThreadedMotoServer

from capstan.sandbox.cloud import sts


@dataclass
class SandboxCloud:
    url: str
    _server: ThreadedMotoServer = field(repr=False)
    _stopped: bool = field(default=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def stop(self) -> None:
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        self._server.stop()
        # ThreadedMotoServer shuts the loop down but leaves the listening socket open.
        wsgi_server = getattr(self._server, "_server", None)
        if wsgi_server is not None:
            wsgi_server.server_close()


def install_extensions() -> None:
    """Teach moto what the sandbox adds to it (idempotent, process-wide)."""
    sts.install()


def start_sandbox_cloud(*, host: str = "127.0.0.1", port: int = 0) -> SandboxCloud:
    """Start a sandbox cloud on `host` (a free port unless `port` is given)."""
    install_extensions()
    werkzeug_log = logging.getLogger("werkzeug")
    if werkzeug_log.level == logging.NOTSET:
        # One line per AWS call is noise; werkzeug would otherwise log at INFO to stderr.
        werkzeug_log.setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address=host, port=port, verbose=False)
    server.start()
    bound_host, bound_port = server.get_host_and_port()
    return SandboxCloud(url=f"http://{bound_host}:{bound_port}", _server=server)
