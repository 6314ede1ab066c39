"""Extension: RDS-managed master passwords, rotated as RDS rotates them, and the one password a DB
instance accepts.

With `ManageMasterUserPassword`, RDS generates the master user's password, keeps it in a Secrets
Manager secret it owns (`rds!db-…`, owning service `rds`) and rotates it every seven days by
default; the schedule can be changed, and a rotation asked for at once, in Secrets Manager
(`RotateSecret`) or with `ModifyDBInstance RotateMasterUserPassword`
(https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/rds-secrets-manager.html, "Rotating the
master user password secret for a DB instance"). A managed rotation sets the new password on the
instance and moves the secret's staging labels: the new version `AWSCURRENT`, the one before
`AWSPREVIOUS`
(https://docs.aws.amazon.com/secretsmanager/latest/userguide/rotate-secrets_managed.html,
https://docs.aws.amazon.com/secretsmanager/latest/userguide/whats-in-a-secret.html);
`DescribeSecret` shows `RotationEnabled`, `RotationRules`, `LastRotatedDate` and
`NextRotationDate` (https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_DescribeSecret.html).

moto makes every such secret with one fixed password and the user name `admin`, never rotates it,
and its `RotateSecret` of a secret without a rotation function adds an `AWSCURRENT` version that
has no value. `install()` makes the secret RDS's:

- it holds the instance's master user name and a password of its own, which the instance
  accepts (`accepted_password`);
- it carries RDS's schedule (every 7 days unless `RotateSecret` set another), and the simulator
  rotates it when `due` (`simulator.rds`; the `database_password_rotation_seconds` knob shortens
  the period for every managed secret);
- a rotation — the schedule's, an administrator's `RotateSecret` or `ModifyDBInstance
  RotateMasterUserPassword` (which moto sends to `RotateSecret`) — is `rotate`; `RotateSecret`
  with `RotateImmediately` false only changes the schedule.

`connections(account, region, variables)` answers what a PostgreSQL client given those
environment variables gets from the account's DB instances: the connection URLs among them that
name an RDS endpoint (`postgres://` or `postgresql://`, the password from the URL or else
`PGPASSWORD`, as libpq reads them) and, for each, None or the error libpq reports. It reads only
the variables and the instances, as a client in the account would: the sandbox knows nothing of
who wrote them. A URL naming any other host is left out: the sandbox cannot tell whether it
answers.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from moto.rds.models import MasterUserSecret, rds_backends
from moto.secretsmanager.models import SecretsManagerBackend

_MARK = "_capstan_rds_passwords"
_install_lock = threading.Lock()
# One lock for every password change and every look at one (the server's threads and the
# simulator's).
lock = threading.RLock()
OWNING_SERVICE = "rds"
ROTATION_DAYS = 7  # RDS's default schedule
PORT = 5432
RDS_DOMAIN = ".rds.amazonaws.com"  # every DB instance's endpoint is under it
_DAY = 86400.0


@dataclass(frozen=True)
class Connection:
    """A connection a client would open: its URL without the password, and libpq's error when
    the instance refuses it (None: it succeeds)."""

    variable: str
    url: str
    error: str | None


def _owned_by_rds(secret: Any) -> bool:
    return bool(getattr(secret, "owning_service", None) == OWNING_SERVICE)


def _new_password() -> str:
    # RDS's generated passwords are long and random; what matters here is that each differs.
    return secrets.token_urlsafe(24)


def accepted_password(database: Any) -> str | None:
    """The master password the instance accepts now (None: not one RDS manages)."""
    with lock:
        return getattr(database, "capstan_master_password", None)


def period_seconds(secret: Any, override: float = 0.0) -> float:
    """How long after its last rotation (or its creation) the secret is rotated again."""
    if override > 0:
        return override
    days = int(getattr(secret, "auto_rotate_after_days", 0) or ROTATION_DAYS)
    return days * _DAY


def due(secret: Any, now: float, override: float = 0.0) -> bool:
    """Whether the schedule rotates the secret at `now` (wall-clock seconds); keeps its
    `NextRotationDate` in step with the period in force."""
    with lock:
        since = float(secret.last_rotation_date or secret.created_date or now)
        next_at = since + period_seconds(secret, override)
        secret.next_rotation_date = next_at
        return now >= next_at


def rotate(database: Any) -> None:
    """RDS's managed rotation of the instance's master user secret: a new password, set on the
    instance and staged `AWSCURRENT`, the previous one `AWSPREVIOUS`."""
    holder = getattr(database, "master_user_secret", None)
    if holder is None:
        return
    with lock:
        _rotate(holder.secret, database)


def _rotate(secret: Any, database: Any) -> None:
    current = secret.versions.get(secret.default_version_id or "") or {}
    values = json.loads(current.get("secret_string") or "{}")
    password = _new_password()
    values.update(username=database.master_username, password=password)
    now = time.time()
    version_id = str(uuid.uuid4())
    version = {
        "createdate": now,
        "version_id": version_id,
        "version_stages": ["AWSCURRENT"],
        "secret_string": json.dumps(values),
    }
    secret.reset_default_version(version, version_id)
    version["version_stages"] = ["AWSCURRENT"]
    secret.secret_string = version["secret_string"]
    database.capstan_master_password = password
    secret.last_changed_date = now
    secret.last_rotation_date = now
    secret.next_rotation_date = now + period_seconds(secret)


def _schedule(secret: Any, days: int | None = None) -> None:
    """RDS's rotation settings on the secret, as `DescribeSecret` shows them."""
    secret.rotation_requested = True
    secret.rotation_enabled = True
    secret.auto_rotate_after_days = days or secret.auto_rotate_after_days or ROTATION_DAYS
    since = float(secret.last_rotation_date or secret.created_date or time.time())
    secret.next_rotation_date = since + period_seconds(secret)


def _database_of(secret: Any) -> Any:
    """The DB instance whose master user secret `secret` is (RDS tags it with the instance's
    ARN), or None."""
    tags = {tag["Key"]: tag["Value"] for tag in secret.tags or []}
    arn = tags.get("aws:rds:primaryDBInstanceArn", "")
    parts = arn.split(":")
    if len(parts) < 7:
        return None
    backend = rds_backends[secret.account_id][secret.region]
    return backend.databases.get(parts[6])


# -- reaching a database ------------------------------------------------------------------------


def connections(account_id: str, region: str, variables: Mapping[str, str]) -> list[Connection]:
    """Each PostgreSQL connection URL among `variables`, with what opening it gets."""
    found = []
    for name, value in sorted(variables.items()):
        parts = urlsplit(value)
        host = parts.hostname or ""
        if parts.scheme not in ("postgres", "postgresql") or not host.endswith(RDS_DOMAIN):
            continue
        password = unquote(parts.password) if parts.password else variables.get("PGPASSWORD")
        user = unquote(parts.username or "") or variables.get("PGUSER", "")
        port = parts.port or PORT
        database_name = parts.path.lstrip("/") or user
        shown = f"{parts.scheme}://{user}@{host}:{port}/{database_name}"
        error = _refusal(account_id, region, host, port, user, password, database_name)
        found.append(Connection(name, shown, error))
    return found


def _refusal(
    account_id: str,
    region: str,
    host: str,
    port: int,
    user: str,
    password: str | None,
    database_name: str,
) -> str | None:
    """libpq's error for a connection to `host`, or None when the instance accepts it."""
    backend = rds_backends[account_id][region]
    database = next(
        (item for item in list(backend.databases.values()) if item.address == host), None
    )
    if database is None:
        return f'could not translate host name "{host}" to address: Name or service not known'
    at = f'connection to server at "{host}", port {port} failed: '
    if port != int(database.port or PORT) or database.status not in ("available", "modifying"):
        return f"{at}Connection refused"
    if not password:
        return f"{at}fe_sendauth: no password supplied"
    if user != database.master_username or password != accepted_password(database):
        return f'{at}FATAL:  password authentication failed for user "{user}"'
    if database_name not in {"postgres", database.db_name or ""}:
        return f'{at}FATAL:  database "{database_name}" does not exist'
    return None


# -- moto ------------------------------------------------------------------------------------


def install() -> None:
    with _install_lock:
        if getattr(MasterUserSecret, _MARK, False):
            return
        make_secret = MasterUserSecret._create_secret
        rotate_secret = SecretsManagerBackend.rotate_secret

        def _create_secret(self: Any, kms_key_id: str | None) -> Any:
            with lock:
                secret = make_secret(self, kms_key_id)
                password = _new_password()
                values = {"username": self.resource.master_username, "password": password}
                version = secret.versions[str(secret.default_version_id)]
                version["secret_string"] = json.dumps(values)
                secret.secret_string = version["secret_string"]
                self.resource.capstan_master_password = password
                _schedule(secret)
            return secret

        def managed_rotate_secret(
            self: SecretsManagerBackend,
            secret_id: str,
            client_request_token: str | None = None,
            rotation_lambda_arn: str | None = None,
            rotation_rules: dict[str, Any] | None = None,
            rotate_immediately: bool = True,
        ) -> str:
            secret: Any = (
                self.secrets.get(secret_id) if self._is_valid_identifier(secret_id) else None
            )
            if secret is None or not _owned_by_rds(secret) or secret.is_deleted():
                return rotate_secret(
                    self,
                    secret_id,
                    client_request_token=client_request_token,
                    rotation_lambda_arn=rotation_lambda_arn,
                    rotation_rules=rotation_rules,
                    rotate_immediately=rotate_immediately,
                )
            with lock:
                days = (rotation_rules or {}).get("AutomaticallyAfterDays")
                _schedule(secret, int(days) if days else None)
                database = _database_of(secret)
                if rotate_immediately and database is not None:
                    _rotate(secret, database)
                return str(secret.to_short_dict())

        MasterUserSecret._create_secret = _create_secret  # type: ignore[method-assign]
        SecretsManagerBackend.rotate_secret = managed_rotate_secret  # type: ignore[method-assign]
        setattr(MasterUserSecret, _MARK, True)


__all__ = [
    "Connection",
    "accepted_password",
    "connections",
    "due",
    "install",
    "period_seconds",
    "rotate",
]
