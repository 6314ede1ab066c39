"""Password hashes (`auth.secrets`): an unknown email is checked against a hash of the same cost
as a user's, made when first needed rather than by every process at start."""

from __future__ import annotations

import subprocess
import sys

from argon2 import extract_parameters

from capstan.auth import secrets


def test_an_unknown_email_is_checked_against_a_hash_at_the_current_cost() -> None:
    stored = secrets.hash_password("a long passphrase 1")
    assert secrets.verify_password(stored, "a long passphrase 1")
    assert not secrets.verify_password(stored, "a long passphrase 2")
    assert not secrets.verify_password(
        None, "a long passphrase 1"
    )  # no user: a hash checked all the same
    dummy = secrets._dummy_hash
    assert dummy is not None
    assert extract_parameters(dummy) == extract_parameters(stored)


def test_the_unknown_email_hash_follows_a_new_cost() -> None:
    before = secrets._hasher
    try:
        secrets.use_hash_cost(time_cost=2, memory_cost_kib=16, parallelism=1)
        assert not secrets.verify_password(None, "a long passphrase 1")
        assert secrets._dummy_hash is not None
        made = extract_parameters(secrets._dummy_hash)
        assert (made.time_cost, made.memory_cost, made.parallelism) == (2, 16, 1)
    finally:
        secrets._hasher, secrets._dummy_hash = before, None


def test_importing_the_module_hashes_nothing() -> None:
    program = (
        "import argon2\n"
        "made = []\n"
        "hash_ = argon2.PasswordHasher.hash\n"
        "argon2.PasswordHasher.hash = lambda self, *a: made.append(1) or hash_(self, *a)\n"
        "import capstan.auth.secrets, capstan.app\n"
        "print(len(made), capstan.auth.secrets._dummy_hash)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "None"]
