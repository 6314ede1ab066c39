"""The sandbox cloud: a moto server on a loopback port, inside this process, with the sandbox's
extensions installed (see the package docstring), and a count of the AWS calls it answered at
`GET /_capstan/stats` (see `stats`).

moto keeps its state per process, in memory: every sandbox started in one process shares it, and
it is gone when the process ends, unless the sandbox is given a directory to keep it in
(`state_dir`, see `persistence`).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from moto.server import ThreadedMotoServer

from capstan_sandbox.cloud import (
    acm,
    authorization,
    bedrock,
    bedrock_profiles,
    ec2_quotas,
    ecs_services,
    edge_limits,
    elasticache,
    iam_limits,
    limits,
    listener_certificates,
    load_balancer_limits,
    log_pages,
    moto_threads,
    moto_work,
    rds,
    route53,
    s3_metrics,
    sts,
    vpc_checks,
)
from capstan_sandbox.cloud import cloudfront as cloudfront_extension
from capstan_sandbox.cloud.authorization import Authorizer
from capstan_sandbox.cloud.keep_alive import KeepAliveServer
from capstan_sandbox.cloud.persistence import (
    STATE_FILE,
    Gate,
    GateMiddleware,
    Keeper,
    Restored,
    load,
)
from capstan_sandbox.cloud.product import Product, serve
from capstan_sandbox.cloud.simulator import Simulator, simulator
from capstan_sandbox.cloud.stats import CallCounter
from capstan_sandbox.cloud.throttling import Throttler
from capstan_sandbox.cloud.validation import Validator
from capstan_sandbox.dns.control import DnsControl
from capstan_sandbox.dns.server import PublicDnsServer


class _CountingMotoServer(ThreadedMotoServer):
    """moto's threaded server with the call counter of `stats`, the IAM authorizer of
    `authorization`, AWS's API rate limits (`throttling`) and the model's constraints
    (`validation`) in front of it, keeping its clients' connections open (`keep_alive`), and,
    when its state is kept, the gate a save closes (`persistence`)."""

    gate: Gate | None = None
    dns: PublicDnsServer | None = None

    def _server_entry(self) -> None:
        moto = DomainDispatcherApplication(create_backend_app)
        dns = self.dns
        app = DnsControl(
            CallCounter(Authorizer(Throttler(Validator(moto)))),
            lambda: dns.nameserver if dns is not None else None,
        )
        if self.gate is not None:
            app = GateMiddleware(app, self.gate)  # type: ignore[assignment]
        self._server = KeepAliveServer(self._ip_address, self._port, app)
        self._server_ready_event.set()
        self._server.serve_forever()


@dataclass
class SandboxCloud:
    url: str
    _server: ThreadedMotoServer = field(repr=False)
    # The public DNS's UDP address, "host:port" (`capstan_sandbox.dns`).
    dns_nameserver: str = ""
    # What restoring its kept state found (None: its state lives in memory only).
    restored: Restored | None = None
    _keeper: Keeper | None = field(default=None, repr=False)
    _stopped: bool = field(default=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def simulator(self) -> Simulator:
        """The process's simulator: knobs (`configure`) and failures (`fail_rollouts`)."""
        return simulator()

    def stop(self) -> None:
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        self._server.stop()
        # ThreadedMotoServer shuts the loop down but leaves the listening socket open, and the
        # connections its clients keep (`KeepAliveServer.server_close` closes both).
        wsgi_server = getattr(self._server, "_server", None)
        if wsgi_server is not None:
            wsgi_server.server_close()
        dns = getattr(self._server, "dns", None)
        if dns is not None:
            dns.stop()
        if self._keeper is not None:
            self._keeper.stop()  # the last save, with no call under way
        simulator().release()


def install_extensions() -> None:
    """Teach moto what the sandbox adds to it (idempotent, process-wide)."""
    sts.install()
    route53.install()
    elasticache.install()
    rds.install()
    acm.install()
    bedrock.install()
    bedrock_profiles.install()
    s3_metrics.install()
    cloudfront_extension.install()
    edge_limits.install()
    limits.install()
    iam_limits.install()
    ecs_services.install()
    ec2_quotas.install()
    load_balancer_limits.install()
    listener_certificates.install()
    vpc_checks.install()
    log_pages.install()
    authorization.install()
    moto_work.install()
    moto_threads.install()  # last: it locks the creates the others check (see its docstring)


def start_sandbox_cloud(
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    product: Product | None = None,
    build_seconds: float | None = None,
    task_start_seconds: float | None = None,
    state_dir: Path | None = None,
    **knobs: float,
) -> SandboxCloud:
    """Start a sandbox cloud on `host` (a free port unless `port` is given), and its simulator.

    With `state_dir`, the state saved there is restored first and kept there from then on
    (`persistence`; one such sandbox per process, whose state it is); without it, the state
    lives in memory only.

    Knobs (see `capstan_sandbox.cloud.knobs.Knobs`; seconds, 0 = at once) left None keep
    their current values — 2 s builds and task starts unless configured otherwise. They are
    process-wide, like moto's state, and so is `product` (what the sandbox knows of the product
    it serves; None keeps the one served so far, at first `Product()`).
    """
    if product is not None:
        serve(product)
    install_extensions()
    werkzeug_log = logging.getLogger("werkzeug")
    if werkzeug_log.level == logging.NOTSET:
        # One line per AWS call is noise; werkzeug would otherwise log at INFO to stderr.
        werkzeug_log.setLevel(logging.WARNING)
    settings: dict[str, Any] = dict(knobs)
    if build_seconds is not None:
        settings["build_seconds"] = build_seconds
    if task_start_seconds is not None:
        settings["task_start_seconds"] = task_start_seconds
    server = _CountingMotoServer(ip_address=host, port=port, verbose=False)
    # The public DNS listens on the sandbox's address too, on a free UDP port of its own.
    server.dns = PublicDnsServer(host)
    keeper = restored = None
    if state_dir is not None:
        restored = load(state_dir / STATE_FILE)
        server.gate = Gate()
        keeper = Keeper(state_dir / STATE_FILE, server.gate)
    server.start()
    simulator().acquire(**settings)
    if keeper is not None:
        keeper.start()
    bound_host, bound_port = server.get_host_and_port()
    return SandboxCloud(
        url=f"http://{bound_host}:{bound_port}",
        _server=server,
        dns_nameserver=server.dns.nameserver,
        restored=restored,
        _keeper=keeper,
    )


def run_sandbox_cloud(
    host: str = "127.0.0.1",
    port: int = 4566,
    *,
    product: Product | None = None,
    state_dir: Path | None = None,
    **knobs: float,
) -> None:
    """Serve a sandbox cloud until interrupted (Ctrl-C or SIGTERM): `capstan sandbox`.

    Its own process, so a Capstan server can be killed while the cloud keeps its state.
    """
    import signal

    stopped = threading.Event()

    def stop(_signal: int, _frame: object) -> None:
        stopped.set()

    previous = signal.signal(signal.SIGTERM, stop)
    sandbox = start_sandbox_cloud(
        host=host, port=port, product=product, state_dir=state_dir, **knobs
    )
    print(f"sandbox cloud at {sandbox.url}", flush=True)
    print(f"public DNS at {sandbox.dns_nameserver} (UDP)", flush=True)
    try:
        while not stopped.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        sandbox.stop()
        signal.signal(signal.SIGTERM, previous)
