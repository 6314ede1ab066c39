"""moto beside itself (`moto_threads`): a role is found (or not) while another call changes the
account's roles — moto walked the live dictionary, and a change in the middle of the walk was a
bare 500 — and so are ECS's task definitions while one is registered; a second create started
between a first one's check and its keeping is refused."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from moto.ecs.models import ecs_backends
from moto.iam.exceptions import LimitExceededException, NotFoundException
from moto.iam.models import User, iam_backends
from moto.secretsmanager.exceptions import ResourceExistsException
from moto.secretsmanager.models import SecretsManagerBackend, secretsmanager_backends

from capstan_sandbox.cloud import moto_threads
from tests.sandbox.between import second_between

ACCOUNT = "000000000417"  # an account of this test's own


class _Interloper:
    """A role whose name, when read, makes another role: another thread's `CreateRole` landing
    in the middle of a walk over the roles."""

    arn = f"arn:aws:iam::{ACCOUNT}:role/interloper"

    def __init__(self, roles: dict[str, Any]) -> None:
        self._roles = roles

    @property
    def name(self) -> str:
        self._roles[f"AROAMADE{len(self._roles)}"] = object()
        return "interloper"


@pytest.mark.usefixtures("endpoint")  # the sandbox, so its extensions are installed
def test_a_role_is_looked_up_while_another_is_made() -> None:
    moto_threads.install()  # installed with the sandbox's extensions; asking again is a no-op
    backend = iam_backends[ACCOUNT]["global"]
    backend.roles["AROAINTERLOPER"] = _Interloper(backend.roles)
    try:
        with pytest.raises(NotFoundException):
            backend.get_role("nobody")  # walks every role: reads the interloper's name
        assert backend.get_role_by_arn(_Interloper.arn).name == "interloper"
    finally:
        backend.roles.clear()


@pytest.mark.usefixtures("endpoint")
def test_two_secrets_of_one_name_made_at_once_are_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """Secrets Manager refuses the second of two creates of one name (`ResourceExistsException`);
    the second is started between the first's check of the name and its secret being kept."""
    backend = secretsmanager_backends[ACCOUNT]["us-east-1"]

    def create(value: str) -> None:
        backend.create_secret(
            "shared-key", value, None, None, None, None, None, [], force_overwrite=False
        )

    try:
        refused = second_between(
            monkeypatch,
            (SecretsManagerBackend, "_add_secret"),
            lambda: create("first"),
            lambda: create("second"),
            ResourceExistsException,
        )
        assert backend.get_secret_value("shared-key", None, None)["SecretString"] == "first"
        assert len(refused) == 1, refused
    finally:
        backend.secrets.clear()


@pytest.mark.usefixtures("endpoint")
def test_two_access_keys_made_at_once_beside_one_are_two(monkeypatch: pytest.MonkeyPatch) -> None:
    """IAM allows a user two access keys: of two creates beside the user's one, the second is
    refused (`LimitExceeded`); it is started between the first's count of the keys and its key
    being kept."""
    backend = iam_backends[ACCOUNT]["global"]
    backend.create_user("us-east-1", "keyholder")
    backend.create_access_key("keyholder")
    try:
        refused = second_between(
            monkeypatch,
            (User, "create_access_key"),
            lambda: backend.create_access_key("keyholder"),
            lambda: backend.create_access_key("keyholder"),
            LimitExceededException,
        )
        assert len(backend.list_access_keys("keyholder")) == 2
        assert len(refused) == 1, refused
    finally:
        backend.users.clear()
        backend.access_keys.clear()


class _SlowDefinition:
    """A task definition that, as a walk over the task definitions reads it, lets another
    thread's `RegisterTaskDefinition` run (for up to half a second) before the walk goes on."""

    family = "capstan-slow"
    status = "ACTIVE"

    def __init__(self, register: threading.Thread) -> None:
        self._register = register

    @property
    def arn(self) -> str:
        self._register.start()
        self._register.join(timeout=0.5)
        return f"arn:aws:ecs:us-east-1:{ACCOUNT}:task-definition/capstan-slow:1"


@pytest.mark.usefixtures("endpoint")
def test_task_definitions_are_listed_while_another_is_registered() -> None:
    """moto's `ListTaskDefinitions` walked the live families: a registration of a new family in
    the middle of the walk failed it (`dictionary changed size during iteration`, a bare 500).
    The registration now waits for the walk, and both succeed."""
    backend = ecs_backends[ACCOUNT]["us-east-1"]
    container = [{"name": "app", "image": "nginx", "memory": 128}]
    register = threading.Thread(
        target=lambda: backend.register_task_definition("capstan-new", container)
    )
    backend.task_definitions["capstan-slow"] = {1: _SlowDefinition(register)}
    try:
        listed = backend.list_task_definitions(None)
        register.join(timeout=10)
        assert listed == [f"arn:aws:ecs:us-east-1:{ACCOUNT}:task-definition/capstan-slow:1"]
        assert backend.list_task_definitions("capstan-new") == [
            f"arn:aws:ecs:us-east-1:{ACCOUNT}:task-definition/capstan-new:1"
        ]
    finally:
        backend.task_definitions.clear()
