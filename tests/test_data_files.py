"""What Capstan writes to its data directory is its owner's alone: the directory 0700, and every
file in it 0600 — the SQLite database (and the -wal/-shm files SQLite makes beside it), the keys
and secrets the dev server generates, the dev user's credentials and the dev server's record.
Issue 47, finding 6: the SQLite file was created 0644, readable by every user of the machine."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from capstan import cli, dev_server
from capstan.config import Settings
from capstan.db import make_engine
from capstan.migrations import upgrade


@pytest.fixture
def usual_umask() -> Iterator[None]:
    """The umask most systems start processes with (group and others may read new files)."""
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_data_directory_and_its_files_are_the_owners_only(
    tmp_path: Path, usual_umask: None
) -> None:
    data_dir = tmp_path / "data"
    settings = Settings.for_dev(data_dir=data_dir, database_url=None)
    upgrade(settings)
    cli._dev_first_start(settings)
    dev_server.write_record(settings)

    async def modes_while_open() -> dict[str, str]:
        engine = make_engine(settings.sqlalchemy_url)
        try:
            async with engine.begin() as connection:
                await connection.execute(text("DELETE FROM sign_in_counters"))
                # The write-ahead log and its index exist while a connection is open.
                files = sorted(path for path in data_dir.iterdir() if path.is_file())
                return {path.name: oct(_mode(path)) for path in files}
        finally:
            await engine.dispose()

    modes = asyncio.run(modes_while_open())
    assert _mode(data_dir) == 0o700
    assert {
        "capstan.db",
        "capstan.db-wal",
        "capstan.db-shm",
        "secret_key",
        "git_host_app.pem",
        "dev_credentials.json",
        dev_server.RECORD_NAME,
    } <= set(modes)
    assert set(modes.values()) == {oct(0o600)}, modes
