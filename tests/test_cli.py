"""The `capstan` operator commands: the admin and migrate commands through the typer program in
this process; the dev server as a user starts it, a process of its own."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest

from tests.command import CAPSTAN, clean_env, run_here
from tests.harness import free_socket, http_client


def test_create_user_creates_or_joins_the_organization(tmp_path: Path) -> None:
    base = ["admin", "create-user", "--name", "Ada", "--data-dir", str(tmp_path)]
    first = run_here(
        *base,
        "--email",
        "ada@example.test",
        "--password",
        "a long passphrase 1",
        "--organization",
        "Acme",
    )
    assert first.exit_code == 0, first.output
    assert "organization Acme" in first.stdout
    org_id = re.search(r"organization Acme \((org_\w+)\)", first.stdout)
    second = run_here(
        *base,
        "--email",
        "bob@example.test",
        "--password",
        "another passphrase",
        "--organization",
        "Acme",
    )
    assert second.exit_code == 0, second.output
    assert org_id and org_id.group(1) in second.stdout  # joined, not a second Acme


def test_create_user_refuses_duplicate_email_and_weak_password(tmp_path: Path) -> None:
    base = [
        "admin",
        "create-user",
        "--name",
        "Ada",
        "--organization",
        "Acme",
        "--data-dir",
        str(tmp_path),
    ]
    assert (
        run_here(
            *base, "--email", "ada@example.test", "--password", "a long passphrase 1"
        ).exit_code
        == 0
    )
    duplicate = run_here(*base, "--email", "ADA@example.test", "--password", "a long passphrase 2")
    assert duplicate.exit_code != 0
    assert "already exists" in duplicate.stderr
    weak = run_here(*base, "--email", "eve@example.test", "--password", "short")
    assert weak.exit_code != 0
    assert "at least 12 characters" in weak.stderr


def test_migrate_applies_to_the_configured_database(tmp_path: Path) -> None:
    database = tmp_path / "elsewhere.db"
    result = run_here("migrate", env={"CAPSTAN_DATABASE_URL": f"sqlite:///{database}"})
    assert result.exit_code == 0, result.output
    assert database.exists()
    assert run_here("migrate", env={"CAPSTAN_DATABASE_URL": f"sqlite:///{database}"}).exit_code == 0


def _start_dev(data_dir: Path) -> tuple[subprocess.Popen[str], str, list[str]]:
    sock = free_socket()
    port = sock.getsockname()[1]
    sock.close()
    process = subprocess.Popen(
        [*CAPSTAN, "server", "--dev", "--port", str(port), "--data-dir", str(data_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=clean_env(),
    )
    url = f"http://127.0.0.1:{port}"
    lines: list[str] = []
    deadline = time.monotonic() + 60
    assert process.stdout is not None
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line.rstrip())
        if "Uvicorn running on" in line:  # bound (startup completes before the port is)
            return process, url, lines
    process.kill()
    raise AssertionError("dev server did not start:\n" + "\n".join(lines))


def _stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    process.wait(timeout=30)
    assert process.stdout is not None
    process.stdout.close()


# Starts `capstan server --dev` three times: a whole process, run by `make processes`.
@pytest.mark.processes
def test_dev_mode_first_start_prints_credentials_and_later_starts_reuse_them(
    tmp_path: Path,
) -> None:
    process, url, lines = _start_dev(tmp_path)
    try:
        output = "\n".join(lines)
        assert f"Capstan is serving {url}" in output
        found = re.search(r"email (\S+)\s+password (\S+)", output)
        token = re.search(r"token \(shown once\): (capstan_\w+)", output)
        assert found and token, output
        email, password = found.groups()
        with http_client(base_url=url) as client:
            assert (
                client.post("/api/session", json={"email": email, "password": password}).status_code
                == 201
            )
            me = client.get("/api/session", headers={"Authorization": f"Bearer {token.group(1)}"})
            assert me.status_code == 200 and me.json()["email"] == email
    finally:
        _stop(process)

    process, url, lines = _start_dev(tmp_path)
    try:
        output = "\n".join(lines)
        assert f"password {password}" in output
        assert "shown once" not in output  # the token is never shown again
        with http_client(base_url=url) as client:
            me = client.get("/api/session", headers={"Authorization": f"Bearer {token.group(1)}"})
            assert me.status_code == 200  # same database, same token
    finally:
        _stop(process)
    secret_key = tmp_path / "secret_key"
    assert secret_key.exists() and oct(secret_key.stat().st_mode & 0o777) == "0o600"
