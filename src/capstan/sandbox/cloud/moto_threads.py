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

Secrets Manager's `CreateSecret` likewise checks that the name is free and then keeps the
secret, two steps another call could come between: two creates of one name both succeeded, where
AWS refuses the second (`ResourceExistsException`) — the sandbox operator's concurrent
bootstraps depend on that refusal to agree on one access key. The two steps hold one lock.

`install()` does both (once per process); `tests/sandbox/test_moto_threads.py` changes the
roles in the middle of a walk and puts a second create between a first one's check and its
keeping.
"""

from __future__ import annotations

import threading
from typing import Any

from moto.iam.models import IAMBackend, Role
from moto.secretsmanager.models import SecretsManagerBackend

_MARK = "_capstan_roles_copied"
_install_lock = threading.Lock()
_secrets_lock = threading.Lock()


def _roles(self: IAMBackend) -> list[Role]:
    """The account's roles, as a copy the caller may walk while other calls change them."""
    return list(self.roles.values())


def install() -> None:
    with _install_lock:
        if getattr(IAMBackend, _MARK, False):
            return
        IAMBackend.get_roles = _roles  # type: ignore[method-assign]
        create_secret = SecretsManagerBackend.create_secret

        def create_secret_alone(self: SecretsManagerBackend, *args: Any, **kwargs: Any) -> Any:
            with _secrets_lock:
                return create_secret(self, *args, **kwargs)

        SecretsManagerBackend.create_secret = create_secret_alone  # type: ignore[method-assign]
        setattr(IAMBackend, _MARK, True)
