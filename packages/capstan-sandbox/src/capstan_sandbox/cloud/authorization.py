"""Every call made with an assumed role's credentials is authorized as IAM authorizes it.

A WSGI middleware in front of moto (`Authorizer`). For each signed request whose access key
belongs to an assumed-role session (the customer role Capstan assumes; any role, in fact), it

1. reads the call (`requests.read_call`): the operation and its parameters;
2. finds the IAM actions that authorize the operation and, for each, the resources AWS checks
   (`resources.resources_for`: ARNs built from the catalogue's formats, including the path-less
   ARN of a role that does not exist yet) and the request context (`aws:RequestTag/…`,
   `aws:TagKeys`, `aws:ResourceTag/…` of the resource as it is, `iam:PassedToService`,
   `iam:PermissionsBoundary`, `iam:AWSServiceName`, …), keeping only the keys the catalogue says
   the action supports;
3. evaluates the role's inline and attached policies, its permissions boundary and the session
   policy (`policy.authorize`);
4. passes the request on to moto when every action on every resource is allowed, and otherwise
   answers as AWS does — `AccessDenied` (or the service's own code and format), naming the caller,
   the action and the resource — without moto ever seeing it.

Every decision is kept (`decisions()`), like CloudTrail's record of denied calls, so tests can
show what was refused and why. An operation the sandbox cannot map to resources is refused with
`SandboxAuthorizationGap` (HTTP 500): a gap in the sandbox must be loud, never an allow.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import escape

from moto.iam.models import iam_backends
from moto.sts.models import sts_backends

from capstan_sandbox.cloud import iam_catalogue, new_accounts, policy, regions, service_linked
from capstan_sandbox.cloud.iam_propagation import policies as policies_as_of_now
from capstan_sandbox.cloud.requests import CALL, Call, read_body, read_call
from capstan_sandbox.cloud.resources import Check, ResourceGap, resources_for
from capstan_sandbox.cloud.stats import ACCOUNT, OPERATION
from capstan_sandbox.cloud.tags import find_role

log = logging.getLogger(__name__)
WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


@dataclass(frozen=True)
class Session:
    """An assumed-role session: its ARN, its role's ARN and account, its session policy."""

    arn: str
    role_arn: str
    account: str
    partition: str
    session_policy: str | None


@dataclass(frozen=True)
class AuthorizationDecision:
    caller: str
    action: str
    resource: str
    allowed: bool
    reason: str = ""


# Calls not decided here: GetCallerIdentity needs no permission in AWS; AssumeRole is decided by
# the role's trust policy (`sts`; within one account a trust policy naming the caller suffices).
ALWAYS_ALLOWED = frozenset({"sts:GetCallerIdentity", "sts:AssumeRole"})
_decisions_lock = threading.Lock()
_decisions: deque[AuthorizationDecision] = deque(maxlen=20_000)
_sessions: dict[str, Session | None] = {}
_sessions_lock = threading.Lock()


def decisions(*, denied_only: bool = False) -> list[AuthorizationDecision]:
    """Authorization decisions this process's sandbox made, oldest first."""
    with _decisions_lock:
        found = list(_decisions)
    return [d for d in found if not denied_only or not d.allowed]


def session_of(access_key: str) -> Session | None:
    """The assumed-role session an access key belongs to (None for users and unknown keys)."""
    with _sessions_lock:
        if access_key in _sessions:  # a user's key is remembered as None: no scan per call
            return _sessions[access_key]
    for account_backends in list(sts_backends.values()):
        for backend in list(account_backends.values()):
            for assumed in list(backend.assumed_roles):
                if assumed.access_key_id == access_key:
                    session = Session(
                        arn=assumed.arn,
                        role_arn=assumed.role_arn,
                        account=assumed.role_arn.split(":")[4],
                        partition=assumed.role_arn.split(":")[1],
                        session_policy=assumed.policy,
                    )
                    with _sessions_lock:
                        _sessions[access_key] = session
                    return session
    # A key is issued before it is used, so one unknown now never becomes a session later.
    with _sessions_lock:
        _sessions[access_key] = None
    return None


States = list[tuple[list[str | Mapping[str, Any]], str | Mapping[str, Any] | None]]


def role_policies(session: Session) -> States | None:
    """The role's identity policies and boundary in each state IAM may answer from as of now
    (IAM propagates changes after a delay: `iam_propagation`); None if the role is gone."""
    return policies_of_role(session.account, session.partition, session.role_arn.rsplit("/", 1)[-1])


def policies_of_role(account: str, partition: str, role_name: str) -> States | None:
    """A role's identity policies and boundary in each state IAM may answer from as of now (a
    change IAM has not propagated yet grants nothing, and takes nothing away late:
    `iam_propagation`); None if there is no such role."""
    role = find_role(account, partition, role_name)
    if role is None:
        return None
    return policies_as_of_now(role)


class Authorizer:
    """The WSGI middleware (see the module docstring)."""

    def __init__(self, app: WsgiApp) -> None:
        self._app = app
        # Development aids: every call's checks (audit: nothing is refused), or each refusal.
        self._audit = os.environ.get("CAPSTAN_SANDBOX_IAM_AUDIT")
        self._denied_log = os.environ.get("CAPSTAN_SANDBOX_IAM_DENIED_LOG")

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        if "aws4_request" not in str(environ.get("HTTP_AUTHORIZATION", "")):
            return self._app(environ, start_response)
        call = read_call(environ, read_body(environ))
        if call is not None:
            environ[OPERATION] = f"{call.service}:{call.operation}"
            environ[CALL] = call
        session = session_of(call.access_key) if call is not None else None
        if call is None or session is None:
            return self._app(environ, start_response)
        environ[ACCOUNT] = session.account
        refusal = self.refusal(call, session)
        if refusal is None:
            return self._app(environ, start_response)
        status, headers, payload = refusal
        start_response(status, headers)
        return [payload]

    def refusal(
        self, call: Call, session: Session
    ) -> tuple[str, list[tuple[str, str]], bytes] | None:
        # AWS authenticates before it authorizes: in a region the account has not enabled, it
        # does not accept the account's credentials at all.
        disabled = regions.refusal(call, session.account)
        if disabled is not None:
            return error_response(call, *disabled)
        prefix = iam_catalogue.IAM_PREFIX.get(call.signing_name, call.signing_name)
        if f"{prefix}:{call.operation}" in ALWAYS_ALLOWED:
            return None
        try:
            checks = resources_for(call, prefix, session.account, session.partition)
        except ResourceGap as gap:
            log.error("sandbox authorization gap: %s", gap)
            return _gap(call, str(gap))
        if self._audit:
            _audit(self._audit, call, checks)
            return None
        policies = role_policies(session)
        for check in checks:
            request = check.request
            if policies is None:
                verdict = policy.Verdict(policy.Decision.IMPLICIT_DENY, "because the role is gone")
            else:
                if session.session_policy:
                    identity_verdict = policy.evaluate([session.session_policy], request)
                else:
                    identity_verdict = policy.Decision.ALLOW
                try:
                    verdict = policy.authorize_in_every(policies, request)
                except policy.UnsupportedCondition as unsupported:
                    return _gap(call, f"condition operator {unsupported} is not evaluated")
                if verdict.allowed and identity_verdict is not policy.Decision.ALLOW:
                    verdict = policy.Verdict(
                        identity_verdict, "because no session policy allows the action"
                    )
            with _decisions_lock:
                _decisions.append(
                    AuthorizationDecision(
                        session.arn,
                        request.action,
                        request.resource,
                        verdict.allowed,
                        verdict.reason,
                    )
                )
            if not verdict.allowed:
                if self._denied_log:
                    _append(
                        self._denied_log, {"action": request.action, "resource": request.resource}
                    )
                log.warning(
                    "sandbox IAM denied %s on %s to %s %s",
                    request.action,
                    request.resource,
                    session.arn,
                    verdict.reason,
                )
                sentence = not_authorized(
                    session.arn, request.action, request.resource, verdict.reason
                )
                if check.refused_as is not None:  # the service's own answer (a validation)
                    return error_response(call, 400, check.refused_as, sentence)
                return error_response(call, 403, "AccessDenied", sentence)
        service_linked.make_implied(
            call, [c.request for c in checks], session.account, session.partition
        )
        settling = service_linked.not_ready(call, prefix, session.account)
        if settling is not None:
            return error_response(call, 400, "InvalidParameterException", settling)
        held_back = new_accounts.refusal(call, prefix, session.account)
        if held_back is not None:
            return error_response(call, *held_back)
        return None


def _append(path: str, line: dict[str, Any]) -> None:
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")


def _audit(path: str, call: Call, checks: list[Check]) -> None:
    line = {
        "operation": f"{call.signing_name}:{call.operation}",
        "checks": [
            {
                "action": c.request.action,
                "resource": c.request.resource,
                "context": {k: list(v) for k, v in c.request.context.items()},
            }
            for c in checks
        ],
    }
    _append(path, line)


# -- answers in each protocol's shape -----------------------------------------------------------

_QUERY_DENIED_CODE = {"ec2": "UnauthorizedOperation"}


def not_authorized(caller: str, action: str, resource: str, reason: str) -> str:
    """AWS's sentence for a refused request (`reason`: the verdict's "because …")."""
    return f"User: {caller} is not authorized to perform: {action} on resource: {resource} {reason}"


def _gap(call: Call, detail: str) -> tuple[str, list[tuple[str, str]], bytes]:
    message = (
        f"The sandbox cannot authorize {call.signing_name}:{call.operation}: {detail}. "
        "Teach capstan_sandbox.cloud.resources this operation."
    )
    return error_response(call, 500, "SandboxAuthorizationGap", message)


def error_response(
    call: Call, status: int, code: str, message: str
) -> tuple[str, list[tuple[str, str]], bytes]:
    """AWS's error answer to `call` in its protocol's shape: status line, headers, body."""
    reason = {
        400: "Bad Request",
        401: "Unauthorized",
        403: "Forbidden",
        429: "Too Many Requests",
        500: "Internal Server Error",
        503: "Service Unavailable",
    }[status]
    protocol = call.protocol
    if protocol == "json":
        json_code = "AccessDeniedException" if code == "AccessDenied" else code
        body = json.dumps({"__type": json_code, "message": message}).encode()
        json_status = 400 if status == 403 else status
        return (
            f"{json_status} {'Bad Request' if json_status == 400 else reason}",
            [("Content-Type", "application/x-amz-json-1.1"), ("x-amzn-ErrorType", json_code)],
            body,
        )
    if protocol == "rest-json":
        json_code = "AccessDeniedException" if code == "AccessDenied" else code
        body = json.dumps({"message": message}).encode()
        return (
            f"{status} {reason}",
            [("Content-Type", "application/json"), ("x-amzn-ErrorType", json_code)],
            body,
        )
    if protocol == "ec2":
        ec2_code = _QUERY_DENIED_CODE["ec2"] if code == "AccessDenied" else code
        xml = (
            f"<Response><Errors><Error><Code>{ec2_code}</Code><Message>{escape(message)}</Message>"
            "</Error></Errors><RequestID>capstan-sandbox</RequestID></Response>"
        )
        return (f"{status} {reason}", [("Content-Type", "text/xml")], xml.encode())
    if call.service == "s3":
        xml = f"<Error><Code>{code}</Code><Message>{escape(message)}</Message></Error>"
        return (f"{status} {reason}", [("Content-Type", "application/xml")], xml.encode())
    xml = (
        f"<ErrorResponse><Error><Type>Sender</Type><Code>{code}</Code>"
        f"<Message>{escape(message)}</Message></Error><RequestId>capstan-sandbox</RequestId>"
        "</ErrorResponse>"
    )
    return (f"{status} {reason}", [("Content-Type", "text/xml")], xml.encode())


# -- what AWS gives an account's administrators --------------------------------------------------

ADMINISTRATOR_ACCESS = json.dumps(
    {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
)
_MARK = "_capstan_administrator_access"
_install_lock = threading.Lock()


def install() -> None:
    """Two things AWS does that moto does not, which the authorizer relies on:

    - accounts made through Organizations get `OrganizationAccountAccessRole` with
      administrator access (moto makes the role with no policy at all, which the authorizer
      would rightly refuse everything);
    - an inline role policy made by CloudFormation is kept as JSON, as IAM keeps it (moto keeps
      the template's dict, and GetRolePolicy answers its Python repr).
    """
    from moto.iam.models import Role
    from moto.organizations.models import OrganizationsBackend

    with _install_lock:
        if getattr(OrganizationsBackend.create_account, _MARK, False):
            return
        unpatched = OrganizationsBackend.create_account
        unpatched_put_policy = Role.put_policy

        def put_policy(self: Role, policy_name: str, policy_json: Any) -> None:
            if not isinstance(policy_json, str):
                policy_json = json.dumps(policy_json)
            unpatched_put_policy(self, policy_name, policy_json)

        Role.put_policy = put_policy  # type: ignore[method-assign]

        def create_account(self: OrganizationsBackend, **kwargs: Any) -> dict[str, Any]:
            answer = unpatched(self, **kwargs)
            account_id = answer["CreateAccountStatus"]["AccountId"]
            role_name = kwargs.get("RoleName", "OrganizationAccountAccessRole")
            for backend in iam_backends[account_id].values():
                for role in list(backend.roles.values()):
                    if role.name == role_name:
                        role.put_policy("AdministratorAccess", ADMINISTRATOR_ACCESS)
            return answer

        setattr(create_account, _MARK, True)
        OrganizationsBackend.create_account = create_account  # type: ignore[method-assign]
