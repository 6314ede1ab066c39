"""The dev server's record in its data directory, so a dev worker joins the same sandbox.

`capstan server --dev` starts the sandbox cloud (unless `CAPSTAN_SANDBOX_CLOUD_URL` names one)
and serves the sandbox git host under its own base URL. It writes both addresses, with its pid,
to `<data dir>/dev-server.json` and removes the file on a clean exit. `capstan worker` with a
sandbox cloud or git host reads it (`settings_for_worker`): a worker with a private sandbox of
its own would fail every pass (another operator identity, another account), so without the
record or the variables it refuses to start and says what to set.

The dev server's own sandbox cloud keeps its state in `<data dir>/sandbox-cloud/`, beside
Capstan's database, so a restart finds the accounts, roles and resources that database names
(`capstan_sandbox.cloud.persistence`). `make dev-reset` (`python -m capstan.dev_server reset
DIR`) removes the whole data directory to start clean, unless a live dev server uses it.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capstan.config import CloudMode, ConfigurationError, GitHostMode, Settings

RECORD_NAME = "dev-server.json"
# Where the dev server's own sandbox cloud keeps its state (`capstan_sandbox.cloud.persistence`).
SANDBOX_STATE_DIR = "sandbox-cloud"


@dataclass(frozen=True)
class DevServerRecord:
    pid: int
    base_url: str
    sandbox_cloud_url: str | None
    # The sandbox's public DNS ("host:port"), which the server's workers must ask too.
    dns_nameserver: str | None = None


def record_path(data_dir: Path) -> Path:
    return data_dir / RECORD_NAME


def sandbox_state_dir(data_dir: Path) -> Path:
    return data_dir / SANDBOX_STATE_DIR


def read_record(data_dir: Path) -> DevServerRecord | None:
    """The record of the dev server that uses `data_dir`, if there is one (alive or not)."""
    try:
        saved: dict[str, Any] = json.loads(record_path(data_dir).read_text())
        return DevServerRecord(
            pid=int(saved["pid"]),
            base_url=str(saved["base_url"]),
            sandbox_cloud_url=saved.get("sandbox_cloud_url"),
            dns_nameserver=saved.get("dns_nameserver"),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True


def refuse_if_in_use(data_dir: Path) -> None:
    """Refuse if another live dev server has recorded itself in `data_dir`: checked before the
    sandbox cloud starts too, whose last save would otherwise overwrite that server's state."""
    existing = read_record(data_dir)
    if existing is not None and existing.pid != os.getpid() and is_running(existing.pid):
        raise ConfigurationError(
            f"another dev server (pid {existing.pid}, {existing.base_url}) uses the data "
            f"directory {data_dir}; stop it or pass another --data-dir"
        )


def write_record(settings: Settings) -> DevServerRecord:
    """Record this process as the dev server of `settings.data_dir`; refuses if another live
    dev server has recorded itself there."""
    refuse_if_in_use(settings.data_dir)
    record = DevServerRecord(
        pid=os.getpid(),
        base_url=settings.base_url,
        sandbox_cloud_url=settings.sandbox_cloud_url,
        dns_nameserver=settings.dns_nameserver,
    )
    path = record_path(settings.data_dir)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    # Owner only, like every file of the data directory.
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(json.dumps(record.__dict__))
    temporary.replace(path)
    return record


def remove_record(data_dir: Path) -> None:
    """Remove the record if it is this process's."""
    record = read_record(data_dir)
    if record is not None and record.pid == os.getpid():
        record_path(data_dir).unlink(missing_ok=True)


def settings_for_worker(settings: Settings) -> Settings:
    """`settings` with the sandbox cloud URL and base URL a worker must share with its server.

    Explicit `CAPSTAN_SANDBOX_CLOUD_URL` / `CAPSTAN_BASE_URL` win; what they leave unset comes
    from the running dev server's record; what is still unset is refused, with what to set.
    """
    needs_cloud = settings.cloud is CloudMode.sandbox and not settings.sandbox_cloud_url
    needs_base = settings.git_host is GitHostMode.sandbox and not settings.base_url
    if not (needs_cloud or needs_base):
        return settings
    record = read_record(settings.data_dir)
    if record is not None and not is_running(record.pid):
        record = None  # left behind by a dev server that was killed
    changes: dict[str, Any] = {}
    if record is not None:
        if needs_cloud and record.sandbox_cloud_url:
            changes["sandbox_cloud_url"] = record.sandbox_cloud_url
            if settings.dns_nameserver is None and record.dns_nameserver:
                changes["dns_nameserver"] = record.dns_nameserver
        if needs_base and record.base_url:
            changes["base_url"] = record.base_url
    missing = []
    if needs_cloud and "sandbox_cloud_url" not in changes:
        missing.append("CAPSTAN_SANDBOX_CLOUD_URL (the sandbox cloud the server uses)")
    if needs_base and "base_url" not in changes:
        missing.append("CAPSTAN_BASE_URL (the server serving the sandbox git host)")
    if missing:
        raise ConfigurationError(
            "a worker must use the sandbox of the server it works for, and no running dev "
            f"server has recorded one in {record_path(settings.data_dir)}: start `capstan "
            "server --dev` with the same --data-dir first, or set " + " and ".join(missing)
        )
    return settings.model_copy(update=changes)


def reset(data_dir: Path) -> str:
    """Remove the dev server's data directory (Capstan's database, the sandbox's state, the dev
    secrets): the next `capstan server --dev` starts clean. Refused while a dev server runs on it,
    which would keep writing there."""
    record = read_record(data_dir)
    if record is not None and is_running(record.pid):
        raise ConfigurationError(
            f"a dev server (pid {record.pid}, {record.base_url}) is using {data_dir}; stop it "
            "first, then reset"
        )
    if not data_dir.exists():
        return f"{data_dir} does not exist: the next dev server starts clean."
    shutil.rmtree(data_dir)
    return f"Removed {data_dir}: the next dev server starts clean."


def main(arguments: list[str]) -> int:
    """`python -m capstan.dev_server reset DIR` (what `make dev-reset` runs)."""
    if len(arguments) != 2 or arguments[0] != "reset":
        print("usage: python -m capstan.dev_server reset DATA_DIR", file=sys.stderr)
        return 2
    try:
        print(reset(Path(arguments[1])))
    except ConfigurationError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
