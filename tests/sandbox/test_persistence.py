"""The sandbox cloud kept in a directory (`capstan_sandbox.cloud.persistence`, issue 50): what one
process made, the next finds — after a clean stop and after a kill that gave it no chance to
save at the end — and a file it cannot read is set aside with the reason, never a crash.

Restoring replaces the process's moto state, so each sandbox with a directory runs in a
subprocess of its own; this process only reads files.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

from capstan_sandbox.cloud import persistence

# Makes an account and a role in it through the sandbox's HTTP API, as a client would, and a
# record in its public DNS, then ends as `how` says; prints what restoring said, the
# organization's accounts and the public DNS's names it found.
_SCRIPT = textwrap.dedent(
    """
    import json, os, sys, time
    from pathlib import Path
    import boto3
    import httpx
    from capstan_sandbox.cloud.server import start_sandbox_cloud

    state_dir, how = Path(sys.argv[1]), sys.argv[2]
    sandbox = start_sandbox_cloud(state_dir=state_dir)
    keys = dict(aws_access_key_id="AKIAIOSFODNN7EXAMPLE", aws_secret_access_key="x" * 40)
    organizations = boto3.client(
        "organizations", endpoint_url=sandbox.url, region_name="us-east-1", **keys
    )
    found = []
    if how != "make":  # the organization exists only if the state was kept
        found = [account["Name"] for account in organizations.list_accounts()["Accounts"]]
    if how in ("make", "kill"):
        try:
            organizations.create_organization(FeatureSet="ALL")
        except organizations.exceptions.AlreadyInOrganizationException:
            pass
        name = "made-then-killed" if how == "kill" else "made-then-stopped"
        organizations.create_account(Email=f"{name}@example.test", AccountName=name)
        record = {"name": f"{name}.example", "type": "TXT", "value": how}
        httpx.put(f"{sandbox.url}/_capstan/dns/records", json=record).raise_for_status()
    records = httpx.get(f"{sandbox.url}/_capstan/dns/records").json()["records"]
    names = [record["name"] for record in records]
    print(
        json.dumps({"restored": sandbox.restored.message, "accounts": found, "dns": names}),
        flush=True,
    )
    if how == "kill":
        time.sleep(3)  # a save follows a change within a second or two
        os._exit(0)  # no stop, no last save: what a kill -9 leaves
    sandbox.stop()
    """
)


def _run(state_dir: Path, how: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(state_dir), how],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answer: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer


def test_what_one_sandbox_made_the_next_finds_after_a_stop_and_after_a_kill(
    tmp_path: Path,
) -> None:
    first = _run(tmp_path, "make")
    assert "starts empty" in str(first["restored"])
    assert (tmp_path / persistence.STATE_FILE).exists()
    second = _run(tmp_path, "kill")
    assert "restored its state" in str(second["restored"])
    assert "made-then-stopped" in second["accounts"]  # type: ignore[operator]
    third = _run(tmp_path, "look")
    assert {"made-then-stopped", "made-then-killed"} <= set(third["accounts"])  # type: ignore[call-overload]
    # The public DNS's records are kept with the rest.
    assert third["dns"] == ["made-then-killed.example", "made-then-stopped.example"]


def test_a_file_from_another_version_is_set_aside_with_the_reason(tmp_path: Path) -> None:
    path = tmp_path / persistence.STATE_FILE
    with path.open("wb") as handle:
        pickle.dump({"format": persistence.FORMAT + 1, "moto": "9.9", "python": "3.11"}, handle)
        pickle.dump({"backends": {}}, handle)
    restored = persistence.load(path)
    assert not restored.kept
    assert "saved by another version of the sandbox" in restored.message
    assert f"format {persistence.FORMAT + 1}" in restored.message
    assert "starts empty" in restored.message and restored.discarded
    assert not path.exists()
    assert path.with_name(path.name + ".discarded").exists()


def test_an_unreadable_file_is_set_aside_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / persistence.STATE_FILE
    path.write_bytes(b"not a pickle at all")
    restored = persistence.load(path)
    assert not restored.kept
    assert "could not be read" in restored.message and restored.discarded
    assert path.with_name(path.name + ".discarded").read_bytes() == b"not a pickle at all"


def test_without_a_file_the_sandbox_starts_empty_and_says_where_it_keeps_its_state(
    tmp_path: Path,
) -> None:
    restored = persistence.load(tmp_path / persistence.STATE_FILE)
    assert not restored.kept and not restored.discarded
    assert str(tmp_path / persistence.STATE_FILE) in restored.message
