"""IAM is eventually consistent: a change to a role takes effect only after a while.

AWS says so ("Changes that I make are not always immediately visible", IAM User Guide,
Troubleshooting IAM: https://docs.aws.amazon.com/IAM/latest/UserGuide/troubleshoot_general.html
#troubleshoot_general_eventual-consistency): IAM's changes reach the places that use them after a
delay, so a role made a moment ago may not be assumable yet and a policy put on a role may not
grant yet; AWS advises waiting for, or retrying, what depends on them. moto applies every change
at once, so a driver that used a role it had just made could not be refused in the sandbox.

This module owns the delay (the simulator's knob `iam_propagation_seconds`: a change takes effect
that long after it was made, by the delay configured when it was made). It learns when each
role changed — made, its trust policy, its inline policies, its managed policies attached or
detached or given a new default version, its permissions boundary set or removed — through hooks
on moto's IAM models (`install()`, once per process; moto's API and its CloudFormation both go
through them), and answers "as of now" views of a role:

- `settling(role)`: a role IAM has not propagated since it was made, which no one can assume
  yet: not a caller (`sts`), not a service doing work as it (CodeBuild's `CreateProject` and
  builds, ECS starting a task: `role_checks.unassumable`);
- `policies(role)`: the identity policies and boundary the role has as of now, what the
  authorizer and `role_checks` evaluate;
- `trusts(role)`: the trust policies that must all admit an `sts:AssumeRole`.

While a change propagates, AWS may answer from the role's state before it or after it. The sandbox
errs strict: a request is allowed only if every state IAM may still answer from allows it (the
newest one it has propagated, and each made since), each state evaluated whole
(`policies` answers them all). So what a change grants (a new policy, a statement added, a
boundary removed) takes effect only after the delay, what it takes away (a policy deleted, a
statement removed, a boundary set, a deny added) at once, and what it keeps (a statement edited
to name one more resource still allows the rest) throughout.

Not delayed: the role Organizations makes with a new account (`CreateAccount` reports SUCCEEDED
once the account is ready) and service-linked roles (`service_linked` models the one service known
to show their delay). Time is this module's clock (`now()`), which tests move forward (`advance`,
`settle`) instead of sleeping through the delay.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from moto.iam.models import IAMBackend, ManagedPolicy, Policy, Role, iam_backends
from moto.organizations.models import OrganizationsBackend

from capstan_sandbox.cloud.knobs import knobs

Document = str | Mapping[str, Any]
_MARK = "_capstan_iam_propagation"
_install_lock = threading.Lock()
_lock = threading.RLock()
_offset = 0.0
# What Organizations makes while it makes an account (a thread's flag: its calls nest).
_organizations = threading.local()


@dataclass(frozen=True)
class RoleState:
    """A role as IAM holds it: its identity policies, its boundary's document, its trust policy."""

    identity: tuple[Document, ...]
    boundary: Document | None
    trust: str | None


# Before a role is made it grants nothing and trusts no one.
_NOTHING = RoleState((), None, None)


@dataclass
class _History:
    usable: float  # when the role could first be assumed, on this module's clock (-inf: always)
    # The role's states in the order they were made, each with when it has propagated (was made
    # plus the delay configured then): a delay changed later does not move changes made before.
    states: list[tuple[float, RoleState]]


_histories: dict[tuple[str, str], _History] = {}
# Roles whose changes are not delayed (see the module docstring): (account, role id).
_exempt: set[tuple[str, str]] = set()


# -- the clock and the delay -------------------------------------------------------------------


def now() -> float:
    """This module's clock: monotonic seconds, plus however far tests moved it (`advance`)."""
    return time.monotonic() + _offset


def advance(seconds: float) -> None:
    """Move this module's clock forward: what waiting `seconds` would do, without the wait."""
    global _offset
    with _lock:
        _offset += max(0.0, seconds)


def settle() -> None:
    """Let every change made so far take effect (move the clock past the last of them)."""
    with _lock:
        last = max((h.states[-1][0] for h in _histories.values()), default=float("-inf"))
        advance(last - now())


def delay() -> float:
    """How long IAM's changes take to propagate (the simulator's `iam_propagation_seconds`)."""
    return max(0.0, knobs().iam_propagation_seconds)


# -- views of a role ---------------------------------------------------------------------------


def state_of(role: Any) -> RoleState:
    """The role as IAM holds it now (the default version of each managed policy attached)."""
    # Stored as IAM keeps them: JSON text, or (from CloudFormation) the document itself.
    identity: list[Document] = list(role.policies.values())
    identity += [_default_document(p) for p in list(role.managed_policies.values())]
    boundary: Document | None = None
    if role.permissions_boundary_arn:
        found = iam_backends[role.account_id][role.partition].managed_policies.get(
            role.permissions_boundary_arn
        )
        # A boundary that names a missing policy allows nothing.
        boundary = _default_document(found) if found else {"Statement": []}
    trust = role.assume_role_policy_document
    return RoleState(tuple(identity), boundary, None if trust is None else str(trust))


def _default_document(managed: Any) -> Document:
    for version in list(managed.versions):
        if version.is_default:
            return version.document  # type: ignore[no-any-return]
    return {"Statement": []}


def settling(role: Any) -> bool:
    """Whether IAM has not propagated the role since it was made (no one can assume it yet)."""
    with _lock:
        history = _histories.get((role.account_id, role.id))
        return history is not None and history.usable > now()


def _states(role: Any) -> list[RoleState]:
    """The state IAM has propagated, then those it has not yet, oldest first (one: the role has
    settled; `_NOTHING` first: the role itself has not propagated)."""
    current = state_of(role)
    with _lock:
        key = (role.account_id, role.id)
        history = _histories.get(key)
        if history is None or key in _exempt:
            return [current]
        at = now()
        propagated = [i for i, (ready, _state) in enumerate(history.states) if ready <= at]
        if propagated:
            del history.states[: propagated[-1]]  # superseded by one that has propagated
            kept = [state for _ready, state in history.states]
        else:
            kept = [_NOTHING] + [state for _ready, state in history.states]
        if len(kept) == 1 and history.usable <= at:
            del _histories[key]  # settled: what IAM holds is all there is
    # What IAM holds now is the newest state, whatever the history caught of it.
    return [*kept[:-1], current]


def policies(role: Any) -> list[tuple[list[Document], Document | None]]:
    """The role's identity policies and boundary in each state IAM may answer from as of now,
    oldest first (one, once its changes have propagated): a request is allowed only if every
    one of them allows it (see the module docstring)."""
    return [(list(state.identity), state.boundary) for state in _states(role)]


def trusts(role: Any) -> list[str]:
    """The trust policies that must all admit an AssumeRole of the role as of now."""
    return [state.trust for state in _states(role) if state.trust is not None]


# -- kept across a restart (`persistence`) -----------------------------------------------------


def pending() -> dict[str, Any]:
    """The changes still propagating and the exempt roles, with times as seconds from now (this
    module's clock starts again in another process)."""
    with _lock:
        at = now()
        return {
            "histories": {
                key: (
                    history.usable - at,
                    [(ready - at, state) for ready, state in history.states],
                )
                for key, history in _histories.items()
            },
            "exempt": set(_exempt),
        }


def resume(kept: dict[str, Any]) -> None:
    """Take up what `pending` answered in an earlier process: a change propagating then goes on
    propagating for what was left of its delay."""
    with _lock:
        at = now()
        _histories.clear()
        for key, (usable, states) in kept["histories"].items():
            _histories[key] = _History(
                usable=usable + at, states=[(ready + at, state) for ready, state in states]
            )
        _exempt.clear()
        _exempt.update(kept["exempt"])


# -- learning of changes -----------------------------------------------------------------------


def _made(role: Any) -> None:
    key = (role.account_id, role.id)
    with _lock:
        if getattr(_organizations, "making", False) or role.path.startswith("/aws-service-role/"):
            _exempt.add(key)
            return
        ready = now() + delay()
        _histories[key] = _History(usable=ready, states=[(ready, state_of(role))])


def _changed(role: Any, before: RoleState) -> None:
    after = state_of(role)
    if after == before:
        return
    key = (role.account_id, role.id)
    with _lock:
        if key in _exempt:
            return
        history = _histories.get(key)
        if history is None:  # settled before this change: its state until now was `before`
            never = float("-inf")
            history = _histories[key] = _History(usable=never, states=[(never, before)])
        history.states.append((now() + delay(), after))


def _gone(role: Any) -> None:
    with _lock:
        _histories.pop((role.account_id, role.id), None)
        _exempt.discard((role.account_id, role.id))


def _watching(method: Callable[..., Any], roles: Callable[..., list[Any]]) -> Callable[..., Any]:
    """`method`, noting each role `roles(self, *args)` names as changed by it."""

    @functools.wraps(method)
    def watched(self: Any, *args: Any, **kwargs: Any) -> Any:
        found = roles(self, *args, **kwargs)
        before = [(role, state_of(role)) for role in found]
        answer = method(self, *args, **kwargs)
        for role, state in before:
            _changed(role, state)
        return answer

    return watched


def _this_role(self: Role, *_args: Any, **_kwargs: Any) -> list[Any]:
    return [self]


def _role_named(self: IAMBackend, *args: Any, **kwargs: Any) -> list[Any]:
    name = kwargs.get("role_name", args[0] if args else None)
    try:
        return [self.get_role(str(name))]
    except Exception:  # moto's own refusal follows
        return []


def _attached_role(self: ManagedPolicy, obj: Any, *_args: Any, **_kwargs: Any) -> list[Any]:
    return [obj] if isinstance(obj, Role) else []


def _roles_using(self: Policy, *_args: Any, **_kwargs: Any) -> list[Any]:
    try:
        backend = iam_backends[self.account_id][self.partition]
    except KeyError:
        return []
    arn = getattr(self, "arn", None)
    return [role for role in list(backend.roles.values()) if arn in role.managed_policies]


@contextmanager
def _made_by_organizations() -> Iterator[None]:
    before = getattr(_organizations, "making", False)
    _organizations.making = True
    try:
        yield
    finally:
        _organizations.making = before


def install() -> None:
    """Learn of every change to a role (once per process)."""
    with _install_lock:
        if getattr(IAMBackend, _MARK, False):
            return
        create_role = IAMBackend.create_role
        delete_role = IAMBackend.delete_role
        create_account = OrganizationsBackend.create_account

        @functools.wraps(create_role)
        def made(self: IAMBackend, *args: Any, **kwargs: Any) -> Any:
            role = create_role(self, *args, **kwargs)
            _made(role)
            return role

        @functools.wraps(delete_role)
        def deleted(self: IAMBackend, role_name: str) -> None:
            role = self.get_role(role_name)
            delete_role(self, role_name)
            _gone(role)

        @functools.wraps(create_account)
        def account_made(self: OrganizationsBackend, **kwargs: Any) -> Any:
            with _made_by_organizations():
                return create_account(self, **kwargs)

        IAMBackend.create_role = made  # type: ignore[method-assign]
        IAMBackend.delete_role = deleted  # type: ignore[method-assign]
        OrganizationsBackend.create_account = account_made  # type: ignore[method-assign]
        watched: tuple[tuple[type, str, Callable[..., list[Any]]], ...] = (
            (Role, "put_policy", _this_role),
            (Role, "delete_policy", _this_role),
            (ManagedPolicy, "attach_to", _attached_role),
            (ManagedPolicy, "detach_from", _attached_role),
            (Policy, "update_default_version", _roles_using),
            (IAMBackend, "put_role_permissions_boundary", _role_named),
            (IAMBackend, "delete_role_permissions_boundary", _role_named),
            (IAMBackend, "update_assume_role_policy", _role_named),
        )
        for owner, name, roles in watched:
            setattr(owner, name, _watching(getattr(owner, name), roles))
        setattr(IAMBackend, _MARK, True)


__all__ = [
    "RoleState",
    "advance",
    "delay",
    "install",
    "now",
    "pending",
    "policies",
    "resume",
    "settle",
    "settling",
    "state_of",
    "trusts",
]
