"""Configuration: the only module that reads environment variables.

Every setting is a `CAPSTAN_*` variable (see the README's configuration table). `--dev` fills in
what a laptop needs (SQLite, sandbox cloud and git host, a generated secret key) through
`Settings.for_dev`, never by special cases elsewhere.
"""

from __future__ import annotations

import os
import secrets
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class CloudMode(StrEnum):
    aws = "aws"
    sandbox = "sandbox"


class GitHostMode(StrEnum):
    github = "github"
    sandbox = "sandbox"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CAPSTAN_", extra="ignore")

    data_dir: Path = Path(".capstan")
    database_url: str | None = None
    # PostgreSQL only: keep Capstan's tables in this schema (created if missing).
    database_schema: str | None = None
    secret_key: SecretStr | None = None
    # Where clients reach this server; empty means http://<host>:<port> of `capstan server`.
    base_url: str = ""
    domain: str = "capstan.localhost"
    default_region: str = "us-east-1"
    dev: bool = False

    cloud: CloudMode = CloudMode.aws
    # AWS mode: the principal the customer's role trusts (defaults to the caller identity of the
    # server's own credentials) and the S3 URL where the operator published the role template.
    aws_principal_arn: str | None = None
    aws_template_url: str | None = None
    # Sandbox mode: the address of a sandbox cloud started elsewhere; empty starts one in-process.
    sandbox_cloud_url: str | None = None
    # The DNS server Capstan asks about customers' domains, "host:port" (UDP); None asks the
    # system's resolver. The dev server and the tests point it at the sandbox's public DNS.
    dns_nameserver: str | None = None

    git_host: GitHostMode = GitHostMode.github
    github_app_id: str | None = None
    github_app_slug: str | None = None
    github_private_key: SecretStr | None = None
    github_private_key_file: Path | None = None
    github_webhook_secret: SecretStr | None = None
    # The app's OAuth client: with "Request user authorization (OAuth) during installation" on,
    # the install callback carries a code that proves which installations the user can access.
    github_client_id: str | None = None
    github_client_secret: SecretStr | None = None
    github_api_url: str | None = None
    github_web_url: str | None = None
    # Docker Hub credentials for image builds (a read-only access token): base images are pulled
    # signed in. Without them pulls are anonymous, which Docker Hub limits per address.
    dockerhub_username: str | None = None
    dockerhub_token: SecretStr | None = None

    # Reconcile workers run inside `capstan server` unless this is 0 (then run `capstan worker`).
    worker_concurrency: int = 8
    # The wait for a free slot when every worker slot is busy (a finished pass wakes sooner).
    worker_poll_seconds: float = 0.25
    # The longest a worker with nothing due sleeps: enqueues wake it at once (in this process;
    # on PostgreSQL in every process, by LISTEN/NOTIFY), so this is only the safety net — and,
    # on SQLite, how late a separate `capstan worker --dev` sees work another process enqueued.
    worker_idle_poll_seconds: float = 2.0
    # Every wait between looks at a cloud operation times this (`reconcile.timing.Poll`): 1 for
    # AWS; the test servers use less, since the sandbox's operations finish in a fraction of
    # a second (docs/decisions/0129-quick-tests.md).
    worker_poll_scale: float = 1.0
    worker_lease_seconds: float = 30.0
    resync_seconds: float = 300.0
    rollout_deadline_seconds: float = 900.0
    # How often an enabled cron job looks for the tasks its schedule started (its history).
    cron_look_seconds: float = 30.0
    # A project made with a VPC of its own moves to the network its account shares in the region
    # (`cloud/network_move.py`); off keeps such projects where they are until it is turned on.
    move_own_networks: bool = True
    # After a move points DNS at the new load balancer, the old one keeps answering this long for
    # resolvers that still hold the old record (an alias to a load balancer lives 60 s).
    network_move_drain_seconds: float = 300.0

    session_idle_seconds: int = 7 * 24 * 3600
    session_absolute_seconds: int = 30 * 24 * 3600
    csrf_token_seconds: int = 12 * 3600
    git_host_state_seconds: int = 30 * 60
    # Sign-in limits (docs/decisions/0047 and 0040): attempts per account and client
    # together and per client over `sign_in_window_seconds`; a looser ceiling per account over
    # `sign_in_account_window_seconds`, with a progressive delay once the account passes
    # `sign_in_delay_after_attempts`.
    sign_in_window_seconds: int = 15 * 60
    sign_in_max_attempts_per_account_and_client: int = 5
    sign_in_max_attempts_per_client: int = 30
    sign_in_account_window_seconds: int = 3600
    sign_in_max_attempts_per_account: int = 100
    sign_in_delay_after_attempts: int = 10
    sign_in_delay_max_seconds: float = 5.0
    # Password hashes verified at once, off the event loop (each argon2id check takes 64 MiB).
    password_hash_concurrency: int = 2
    # Sign-ins holding a database connection at once (to count their attempt).
    sign_in_concurrent_counting: int = 4
    # Comma-separated addresses of reverse proxies whose X-Forwarded-For/-Proto is believed
    # ("*" for any). Empty: the TCP peer is the client and forwarded headers are ignored.
    forwarded_allow_ips: str = ""
    # The database pool of one process: requests and the in-process reconcile workers share it,
    # so it holds `worker_concurrency` + `database_pool_size` connections (+ 1 for the workers'
    # LISTEN on PostgreSQL), plus the overflow. Every connection the pool opens it keeps (opened
    # on demand); an overflow connection is closed as soon as it is returned, so under steady load
    # beyond the pool it would be opened again for nearly every request: no overflow by default
    # (docs/decisions/0048). Unset: 20 on PostgreSQL, 4 on SQLite, whose connections each run in
    # a thread of their own (aiosqlite) on one file with one writer: more of them only take turns
    # for the interpreter lock (docs/decisions/0050).
    database_pool_size: int | None = None
    database_max_overflow: int = 0
    database_pool_timeout_seconds: float = 10.0

    @field_validator("worker_poll_scale")
    @classmethod
    def _positive_scale(cls, value: float) -> float:
        if not value > 0:
            raise ValueError("must be positive")
        return value

    @field_validator("base_url")
    @classmethod
    def _strip_slash(cls, value: str) -> str:
        return value.rstrip("/")

    @field_validator("dns_nameserver")
    @classmethod
    def _host_and_port(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return None
        _split_host_port(value)
        return value

    @property
    def dns_nameserver_address(self) -> tuple[str, int] | None:
        """`dns_nameserver` as (host, port), or None for the system's resolver."""
        return None if self.dns_nameserver is None else _split_host_port(self.dns_nameserver)

    def listening_on(self, host: str, port: int) -> Settings:
        """These settings with `base_url` filled in from the listen address when it is unset."""
        if self.base_url:
            return self
        shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host  # noqa: S104
        return self.model_copy(update={"base_url": f"http://{shown}:{port}"})

    @property
    def database_pool_total(self) -> int:
        """Connections one process keeps open at most: requests' and in-process workers' (and
        the connection on which the workers listen for enqueues)."""
        workers = max(0, self.worker_concurrency)
        return self.database_requests_pool_size + workers + (1 if workers else 0)

    @property
    def database_requests_pool_size(self) -> int:
        """The pool's connections for requests: `database_pool_size`, or its default for the
        database."""
        if self.database_pool_size is not None:
            return self.database_pool_size
        return 4 if self.sqlalchemy_url.startswith("sqlite") else 20

    @property
    def trusted_proxies(self) -> list[str]:
        return [part.strip() for part in self.forwarded_allow_ips.split(",") if part.strip()]

    @property
    def https(self) -> bool:
        return self.base_url.startswith("https://")

    @property
    def session_cookie_name(self) -> str:
        return "__Host-capstan_session" if self.https else "capstan_session"

    @property
    def sqlalchemy_url(self) -> str:
        """The database URL with the async driver SQLAlchemy needs."""
        url = self.database_url or f"sqlite:///{(self.data_dir / 'capstan.db').resolve()}"
        return async_database_url(url)

    @property
    def github_api_base(self) -> str:
        if self.github_api_url:
            return self.github_api_url.rstrip("/")
        if self.git_host is GitHostMode.sandbox:
            return f"{self.base_url}/sandbox/git_host/api"
        return "https://api.github.com"

    @property
    def github_web_base(self) -> str:
        if self.github_web_url:
            return self.github_web_url.rstrip("/")
        if self.git_host is GitHostMode.sandbox:
            return f"{self.base_url}/sandbox/git_host"
        return "https://github.com"

    def github_private_key_pem(self) -> str | None:
        if self.github_private_key is not None:
            return self.github_private_key.get_secret_value()
        if self.github_private_key_file is not None:
            return self.github_private_key_file.read_text()
        return None

    def require_secret_key(self) -> bytes:
        if self.secret_key is None:
            raise ConfigurationError(
                "CAPSTAN_SECRET_KEY is not set; set it to a long random string "
                "(or run with --dev, which generates one in the data directory)"
            )
        return self.secret_key.get_secret_value().encode()

    @classmethod
    def for_dev(cls, **overrides: Any) -> Settings:
        """Settings for `capstan server --dev`: everything local, secrets kept in the data dir."""
        settings = cls(**overrides)
        data_dir = settings.data_dir
        data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        changes: dict[str, Any] = {
            "dev": True,
            "cloud": CloudMode.sandbox,
            "git_host": GitHostMode.sandbox,
        }
        if settings.secret_key is None:
            changes["secret_key"] = SecretStr(_read_or_create_secret(data_dir / "secret_key"))
        if settings.github_webhook_secret is None:
            changes["github_webhook_secret"] = SecretStr(
                _read_or_create_secret(data_dir / "git_host_webhook_secret")
            )
        if settings.github_client_id is None:
            changes["github_client_id"] = "Iv1.capstan-dev"
        if settings.github_client_secret is None:
            changes["github_client_secret"] = SecretStr(
                _read_or_create_secret(data_dir / "git_host_client_secret")
            )
        if settings.dockerhub_username is None and settings.dockerhub_token is None:
            # The sandbox's Docker Hub takes any account; builds pull signed in, as an operator
            # should configure them in AWS (anonymous pulls are limited per address).
            changes["dockerhub_username"] = "capstan-dev"
            changes["dockerhub_token"] = SecretStr(
                _read_or_create_secret(data_dir / "dockerhub_token")
            )
        if settings.github_app_id is None:
            changes["github_app_id"] = "1"
        if settings.github_app_slug is None:
            changes["github_app_slug"] = "capstan-dev"
        if settings.github_private_key is None and settings.github_private_key_file is None:
            changes["github_private_key_file"] = _read_or_create_rsa_key(
                data_dir / "git_host_app.pem"
            )
        return settings.model_copy(update=changes)


class ConfigurationError(Exception):
    """The configuration cannot work; the message says which setting to fix."""


def async_database_url(url: str) -> str:
    if url.startswith("sqlite:///"):
        return "sqlite+aiosqlite:///" + url.removeprefix("sqlite:///")
    if url.startswith(("postgresql://", "postgres://")):
        return "postgresql+asyncpg://" + url.split("://", 1)[1]
    return url


def _split_host_port(value: str) -> tuple[str, int]:
    """("host", port) of "host:port" ("[::1]:53" for IPv6); ValueError if it is not one."""
    host, separator, port = value.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not separator or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{value!r} is not host:port")
    return host, int(port)


def _read_or_create_secret(path: Path) -> str:
    if path.exists():
        return path.read_text().strip()
    value = secrets.token_urlsafe(48)
    _write_private(path, value)
    return value


def _read_or_create_rsa_key(path: Path) -> Path:
    if not path.exists():
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        _write_private(path, pem.decode())
    return path


def _write_private(path: Path, text: str) -> None:
    """Write `text` to a file only its owner may read or write (0600)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(text)


__all__ = ["CloudMode", "ConfigurationError", "GitHostMode", "Settings"]
