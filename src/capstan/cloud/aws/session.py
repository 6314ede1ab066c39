"""boto3 sessions and clients bound to one identity and one endpoint.

`Endpoint` is the only thing that differs between AWS and the sandbox cloud: with `url` set, every
client made through an `AwsSession` talks to that address (the sandbox's moto server) and nothing
else, so a sandbox never reaches the internet; with `url` None, clients use AWS's own endpoints.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime
from types import TracebackType
from typing import Any

import boto3.session
import botocore.session
from botocore.config import Config
from botocore.loaders import Loader, create_loader

# boto3 calls block; a process's cloud runs at most this many at once, in worker threads
# (`driver.Cloud.run`).
CLOUD_THREADS = 32

# AWS's standard retry mode: throttling and transient errors are retried with exponential
# backoff and full jitter (base 1 s for throttles), and each client's retry quota stops retrying
# when most calls fail; what outlasts four attempts is the reconciler's to retry, later
# (docs/decisions/0010-driver-retries-under-throttling.md). `total_max_attempts` counts the
# first attempt; botocore's `max_attempts` key counts only the retries.
_CLIENT_CONFIG = Config(
    retries={"mode": "standard", "total_max_attempts": 4},
    connect_timeout=5,
    read_timeout=30,
    user_agent_extra="capstan",
    # A client is shared by every thread of the cloud; with botocore's default pool of 10, the
    # 11th call at once opened a connection (a TLS handshake, against AWS) and dropped it after.
    max_pool_connections=CLOUD_THREADS,
)


# Every session shares one loader of botocore's service models: a fresh loader re-reads and
# parses them for each session. Sessions are made under a lock
# because boto3 appends its own data path to the loader each time (deduplicated here).
_loader_lock = threading.Lock()
_shared_loader: Loader | None = None


def _new_boto3_session(**kwargs: Any) -> boto3.session.Session:
    global _shared_loader
    with _loader_lock:
        core = botocore.session.get_session()
        if _shared_loader is None:
            _shared_loader = create_loader(core.get_config_variable("data_path"))
        core.register_component("data_loader", _shared_loader)
        session = boto3.session.Session(botocore_session=core, **kwargs)
        paths = _shared_loader.search_paths
        paths[:] = list(dict.fromkeys(paths))
        return session


@dataclass(frozen=True)
class Endpoint:
    region: str
    # None: AWS's own endpoints. A URL: every service at that address (the sandbox cloud).
    url: str | None = None


@dataclass(frozen=True)
class Credentials:
    access_key_id: str
    secret_access_key: str = field(repr=False)
    session_token: str | None = field(default=None, repr=False)
    # None for long-lived keys (an IAM user's access key); set for temporary ones.
    expiration: datetime | None = None


class AwsSession:
    """One identity's boto3 session at one endpoint; a context manager that closes its clients.

    `credentials` None means boto3's default chain (environment, shared files, instance or task
    role): how the control plane finds its own identity in AWS mode. Clients are created once per
    service and region, under a lock (boto3 sessions are not thread-safe; clients are).
    """

    def __init__(
        self,
        endpoint: Endpoint,
        credentials: Credentials | None = None,
        *,
        account_id: str | None = None,
        role_name: str | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.credentials = credentials
        # The assumed role this session acts as, when it is one (a customer's access role).
        self.account_id = account_id
        self.role_name = role_name
        if credentials is None:
            self.boto3 = _new_boto3_session(region_name=endpoint.region)
        else:
            self.boto3 = _new_boto3_session(
                aws_access_key_id=credentials.access_key_id,
                aws_secret_access_key=credentials.secret_access_key,
                aws_session_token=credentials.session_token,
                region_name=endpoint.region,
            )
        self._lock = threading.Lock()
        self._clients: dict[tuple[str, str], Any] = {}
        self._closed = False
        # What the driver learned of this identity's account that stays true for the session's
        # life (e.g. the service domain's zone id), so it is not read again with every call.
        self.known: dict[tuple[str, str], str] = {}

    def client(self, service_name: str, *, region: str | None = None) -> Any:
        """A boto3 client for `service_name`, always at this session's endpoint."""
        region_name = region or self.endpoint.region
        key = (service_name, region_name)
        with self._lock:
            if self._closed:
                raise RuntimeError("this AWS session is closed")
            client = self._clients.get(key)
            if client is None:
                client = self.boto3.client(
                    service_name,  # type: ignore[call-overload]
                    region_name=region_name,
                    endpoint_url=self.endpoint.url,
                    config=_CLIENT_CONFIG,
                )
                self._clients[key] = client
            return client

    def partition(self) -> str:
        """`aws`, `aws-cn` or `aws-us-gov`: the ARN partition of this session's region."""
        return self.boto3.get_partition_for_region(self.endpoint.region)

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        with self._lock:
            self._closed = True
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            client.close()

    def __enter__(self) -> AwsSession:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
