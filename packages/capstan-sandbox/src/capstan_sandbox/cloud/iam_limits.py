"""IAM's policy size quotas, which moto only reports (`GetAccountSummary`) and never enforces.

- A role's inline policies hold at most 10,240 characters together, white space not counted:
  `PutRolePolicy`, and CloudFormation's `AWS::IAM::Role` `Policies` (which IAM receives as
  `PutRolePolicy` too), beyond it are refused with `LimitExceeded` ("Maximum policy size of
  10240 bytes exceeded for role …").
- A managed policy's document holds at most 6,144 characters, white space not counted
  (`CreatePolicy`, `CreatePolicyVersion`, CloudFormation's `AWS::IAM::ManagedPolicy`).
- A role has at most 10 managed policies attached (the default quota).

Checked on moto's model (`Role.put_policy`, the backend's `create_policy`, `create_policy_version`
and `attach_role_policy`), which its API and its CloudFormation both go through. `install()` adds
the checks (once per process).
"""

from __future__ import annotations

import json
import threading
from typing import Any

from moto.iam.exceptions import LimitExceededException
from moto.iam.models import IAMBackend, Role

ROLE_POLICY_CHARS = 10_240
MANAGED_POLICY_CHARS = 6_144
POLICIES_PER_ROLE = 10
_MARK = "_capstan_iam_limits"
_install_lock = threading.Lock()


def policy_chars(document: str | dict[str, Any]) -> int:
    """A policy's size as IAM counts it against its quotas: its characters, white space not."""
    text = document if isinstance(document, str) else json.dumps(document)
    return sum(1 for char in text if not char.isspace())


def check_role_policies(role_name: str, documents: list[str | dict[str, Any]]) -> None:
    """IAM's refusal when a role's inline policy documents exceed their aggregate size."""
    if sum(policy_chars(document) for document in documents) > ROLE_POLICY_CHARS:
        raise LimitExceededException(
            f"Maximum policy size of {ROLE_POLICY_CHARS} bytes exceeded for role {role_name}"
        )


def check_managed_policy(document: str | dict[str, Any]) -> None:
    if policy_chars(document) > MANAGED_POLICY_CHARS:
        raise LimitExceededException(f"Cannot exceed quota for PolicySize: {MANAGED_POLICY_CHARS}")


def install() -> None:
    with _install_lock:
        if getattr(Role, _MARK, False):
            return
        put_policy = Role.put_policy
        create_policy = IAMBackend.create_policy
        create_policy_version = IAMBackend.create_policy_version
        attach_role_policy = IAMBackend.attach_role_policy

        def checked_put_policy(self: Role, policy_name: str, policy_json: Any) -> None:
            kept = [doc for name, doc in self.policies.items() if name != policy_name]
            check_role_policies(self.name, [*kept, policy_json])
            put_policy(self, policy_name, policy_json)

        def checked_create_policy(
            self: IAMBackend,
            description: str,
            path: str,
            policy_document: str,
            policy_name: str,
            tags: list[dict[str, str]],
        ) -> Any:
            check_managed_policy(policy_document)
            return create_policy(self, description, path, policy_document, policy_name, tags)

        def checked_create_policy_version(
            self: IAMBackend, policy_arn: str, policy_document: str, set_as_default: bool
        ) -> Any:
            check_managed_policy(policy_document)
            return create_policy_version(self, policy_arn, policy_document, set_as_default)

        def checked_attach_role_policy(self: IAMBackend, policy_arn: str, role_name: str) -> None:
            attached = self.get_role(role_name).managed_policies
            if policy_arn not in attached and len(attached) >= POLICIES_PER_ROLE:
                raise LimitExceededException(
                    f"Cannot exceed quota for PoliciesPerRole: {POLICIES_PER_ROLE}"
                )
            attach_role_policy(self, policy_arn, role_name)

        Role.put_policy = checked_put_policy  # type: ignore[method-assign]
        IAMBackend.create_policy = checked_create_policy  # type: ignore[method-assign]
        IAMBackend.create_policy_version = checked_create_policy_version  # type: ignore[method-assign]
        IAMBackend.attach_role_policy = checked_attach_role_policy  # type: ignore[method-assign]
        setattr(Role, _MARK, True)
