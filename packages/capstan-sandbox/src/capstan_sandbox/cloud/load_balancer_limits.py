"""Elastic Load Balancing's quotas and name limits, enforced as AWS enforces them (values from
`quotas.quotas()`, so a test can lower one):

- `CreateLoadBalancer`: at most `load_balancers_per_region` load balancers in an account's region
  (50 Application Load Balancers by default) — `TooManyLoadBalancers`. moto counts nothing; the
  count and the keeping hold one lock, as for rules.
- `CreateRule`: at most `rules_per_load_balancer` rules (100 by default) over all the listeners of
  one load balancer, default rules not counted — `TooManyRules`. moto counts nothing. The count,
  moto's check that the priority is free (`PriorityInUse`) and the rule's keeping hold one lock
  (`moto_threads`): two creates at once could both pass either check, where AWS refuses the
  second.
- `CreateRule` / `ModifyRule`: a host-header value holds at most `host_header_value_chars`
  characters (128) — `ValidationError`. moto checks 128 only.
- `CreateTargetGroup`: a name holds at most `target_group_name_chars` characters (32) —
  `ValidationError`. moto checks 32 only.
- `CreateLoadBalancer` is idempotent, as AWS documents it: the same name with the same settings
  answers the load balancer that exists; with other settings, `DuplicateLoadBalancerName`
  (https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_CreateLoadBalancer.html).
  moto made a second load balancer of the same name.

A rule's priority (1 to 50,000) and a page's size (1 to 400) are in the model, which
`validation` checks for every request. Without a `PageSize` moto answers 50 rules or load
balancers a page (AWS more), so a caller that does not follow `NextMarker` misses some sooner here
than in AWS.

`install()` adds the checks to moto's backend (once per process).
"""

from __future__ import annotations

import threading
from typing import Any

from moto.elbv2.exceptions import DuplicateLoadBalancerName, ELBClientError, ValidationError
from moto.elbv2.models import ELBv2Backend

from capstan_sandbox.cloud.quotas import quotas

_MARK = "_capstan_load_balancer_limits"
_install_lock = threading.Lock()


class TooManyRulesError(ELBClientError):
    code = "TooManyRules"
    message = "The maximum number of rules has been reached"


class TooManyLoadBalancersError(ELBClientError):
    code = "TooManyLoadBalancers"
    message = "The quota for the number of load balancers has been reached"


def rule_count(backend: ELBv2Backend, listener_arn: str) -> int:
    """The rules (default rules aside) of every listener of the listener's load balancer."""
    listener = next(
        (
            found
            for balancer in list(backend.load_balancers.values())
            for arn, found in list(balancer.listeners.items())
            if arn == listener_arn
        ),
        None,
    )
    if listener is None:
        return 0  # moto answers ListenerNotFound
    balancer = backend.load_balancers[listener.load_balancer_arn]
    return sum(len(item._non_default_rules) for item in list(balancer.listeners.values()))


def check_host_headers(conditions: list[dict[str, Any]] | None) -> None:
    limit = quotas().host_header_value_chars
    for condition in conditions or []:
        if condition.get("Field") != "host-header":
            continue
        values = (condition.get("HostHeaderConfig") or {}).get("Values") or condition.get(
            "Values", []
        )
        for value in values:
            if len(value) > limit:
                raise ValidationError(
                    f"The 'host-header' value is too long; the limit is '{limit}'"
                )


def check_target_group_name(name: str) -> None:
    limit = quotas().target_group_name_chars
    if len(name) > limit:
        raise ValidationError(
            f"Target group name '{name}' cannot be longer than '{limit}' characters"
        )


def _same_settings(existing: Any, asked: dict[str, Any]) -> bool:
    subnets = set(asked.get("subnet_ids") or []) | {
        mapping["SubnetId"] for mapping in asked.get("subnet_mappings") or []
    }
    groups = set(asked.get("security_groups") or [])
    return (
        {subnet.id for subnet in existing.subnets} == subnets
        and (not groups or set(existing.security_groups or []) == groups)
        and (existing.scheme or "internet-facing") == (asked.get("scheme") or "internet-facing")
    )


def install() -> None:
    with _install_lock:
        # The mark is on the class: `vpc_checks` wraps `create_rule` again afterwards.
        if getattr(ELBv2Backend, _MARK, False):
            return
        create_rule = ELBv2Backend.create_rule
        modify_rule = ELBv2Backend.modify_rule
        create_target_group = ELBv2Backend.create_target_group
        create_load_balancer = ELBv2Backend.create_load_balancer
        balancers_lock = threading.Lock()

        def checked_create_load_balancer(self: ELBv2Backend, name: str, **kwargs: Any) -> Any:
            with balancers_lock:
                existing = next(
                    (item for item in list(self.load_balancers.values()) if item.name == name),
                    None,
                )
                if existing is not None:
                    if _same_settings(existing, kwargs):
                        return existing
                    raise DuplicateLoadBalancerName()
                if len(self.load_balancers) >= quotas().load_balancers_per_region:
                    raise TooManyLoadBalancersError()
                return create_load_balancer(self, name, **kwargs)

        def checked_create_rule(
            self: ELBv2Backend,
            listener_arn: str,
            conditions: list[dict[str, Any]],
            *args: Any,
            **kwargs: Any,
        ) -> Any:
            check_host_headers(conditions)
            if rule_count(self, listener_arn) >= quotas().rules_per_load_balancer:
                raise TooManyRulesError()
            return create_rule(self, listener_arn, conditions, **kwargs)

        def checked_modify_rule(
            self: ELBv2Backend,
            rule_arn: str,
            conditions: list[dict[str, Any]],
            *args: Any,
            **kwargs: Any,
        ) -> Any:
            check_host_headers(conditions)
            return modify_rule(self, rule_arn, conditions, **kwargs)

        def checked_create_target_group(self: ELBv2Backend, name: str, **kwargs: Any) -> Any:
            check_target_group_name(name)
            return create_target_group(self, name, **kwargs)

        ELBv2Backend.create_rule = checked_create_rule  # type: ignore[method-assign]
        ELBv2Backend.modify_rule = checked_modify_rule  # type: ignore[method-assign]
        ELBv2Backend.create_target_group = checked_create_target_group  # type: ignore[method-assign]
        ELBv2Backend.create_load_balancer = checked_create_load_balancer  # type: ignore[method-assign,assignment]
        setattr(ELBv2Backend, _MARK, True)
