"""moto's reads that walk a live dictionary, made to walk a copy: the sandbox answers many calls
at once, on a thread each.

moto (5.x) finds an IAM role by name or ARN (`GetRole`, and the role behind most IAM calls) by
walking `IAMBackend.roles.values()`, the dictionary's live view. The sandbox's HTTP server answers
each connection on a thread of its own, so a role made or deleted by one call while another walks
the view fails the walk with `RuntimeError: dictionary changed size during iteration`, and the
call is answered with a bare 500 "Internal Server Error" — not even AWS's error document. AWS
never fails a read because a write ran beside it. Seen in CI: a static website's build start
(`GetRole`, before `CreateRole`) failed so while another test made a role, and its pass was
retried. `IAMBackend.get_roles` answers a list instead: `list(d.values())` copies in one step
(the interpreter lock is held throughout), so no walk sees the dictionary change.

Several of moto's creates likewise check that there is room (the name is free, the user below
its two access keys) and then keep what they made, two steps another call can come between. So
two creates of one secret's name could both succeed where AWS refuses the second
(`ResourceExistsException`; seen in `make test`, five operator keys), and so could two
`PutSecretValue` calls with one `ClientRequestToken` and different values, two `CreateUser`
calls of one name (the second user replacing the first, its keys lost with it) and two
`CreateAccessKey` calls beside a user's one key (a third key, where IAM allows two). The sandbox
operator's concurrent bootstraps depend on those refusals to agree on one access key. The
sandbox's own checks are of the same kind: an origin access control's name (CloudFront refuses a
second `capstan-sites`; `make test` once met two) and a listener rule's priority and the rule
quota (`PriorityInUse`, `TooManyRules`). Each such create holds its service's lock, around the
outermost method — moto's, or the extension that checks before it — so `install()` runs after
every other extension (`server.install_extensions` calls it last). `_ONE_AT_A_TIME` lists them.

ECS walks its live dictionaries too: `ListTaskDefinitions` every family's revisions (a
`RegisterTaskDefinition` beside it failed the walk; seen in `make bench` at 100 deployments at
once, the pass retried), `ListTasks` and `DescribeTasks` every cluster's tasks (which the ECS
simulator adds stopped tasks to: `simulator/task_stops.py` holds `ECS_LOCK` as it does). Those
walks and the calls that change what they walk hold `ECS_LOCK` (a re-entrant one: moto's own
calls nest).

`install()` does all of it (once per process); `tests/sandbox/test_moto_threads.py` changes the
roles in the middle of a walk and puts a second create between a first one's check and its
keeping.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from moto.cloudfront.models import CloudFrontBackend
from moto.ecs.models import EC2ContainerServiceBackend
from moto.elbv2.models import ELBv2Backend
from moto.iam.models import IAMBackend, Role
from moto.secretsmanager.models import SecretsManagerBackend

_MARK = "_capstan_roles_copied"
_install_lock = threading.Lock()
_iam_lock = threading.Lock()
_secrets_lock = threading.Lock()
_cloudfront_lock = threading.Lock()
_elbv2_lock = threading.Lock()
ECS_LOCK = threading.RLock()
# The creates that check for room and then keep what they made (and ECS's walks with the calls
# that change what they walk), by backend, and the lock each holds.
_ONE_AT_A_TIME: tuple[tuple[type, tuple[str, ...], AbstractContextManager[Any]], ...] = (
    (IAMBackend, ("create_user", "create_access_key"), _iam_lock),
    (SecretsManagerBackend, ("create_secret", "put_secret_value"), _secrets_lock),
    (CloudFrontBackend, ("create_origin_access_control",), _cloudfront_lock),
    (ELBv2Backend, ("create_rule",), _elbv2_lock),
    (
        EC2ContainerServiceBackend,
        (
            "list_task_definitions",
            "register_task_definition",
            "deregister_task_definition",
            "delete_task_definitions",
            "list_tasks",
            "describe_tasks",
        ),
        ECS_LOCK,
    ),
)


def _roles(self: IAMBackend) -> list[Role]:
    """The account's roles, as a copy the caller may walk while other calls change them."""
    return list(self.roles.values())


def _alone(method: Callable[..., Any], lock: AbstractContextManager[Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def alone(self: Any, *args: Any, **kwargs: Any) -> Any:
        with lock:
            return method(self, *args, **kwargs)

    return alone


def install() -> None:
    with _install_lock:
        if getattr(IAMBackend, _MARK, False):
            return
        IAMBackend.get_roles = _roles  # type: ignore[method-assign]
        for backend, names, lock in _ONE_AT_A_TIME:
            for name in names:
                setattr(backend, name, _alone(getattr(backend, name), lock))
        setattr(IAMBackend, _MARK, True)
