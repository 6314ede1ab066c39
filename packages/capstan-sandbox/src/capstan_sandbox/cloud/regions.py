"""Regions an AWS account has not enabled: the regions AWS added since March 20, 2019 are off in
every account until someone enables them (the console's Account page, or `account:EnableRegion`).

Until then AWS does not accept the account's credentials there: its services answer as they do
for a token they do not know — the JSON services `UnrecognizedClientException` ("The security
token included in the request is invalid."), the query services `InvalidClientTokenId` (same
words), EC2 `AuthFailure` ("AWS was not able to validate the provided access credentials"), S3
`InvalidToken`, and STS's own regional endpoint `RegionDisabledException`. The check comes
before authorization, as AWS authenticates a request before it authorizes it.

The sandbox's accounts start as a new AWS account does: every opt-in region off. A region is
enabled for every account by `CAPSTAN_SANDBOX_ENABLED_REGIONS="af-south-1,me-south-1"` when the
sandbox cloud starts, or for one account by `enable` (a test, standing in for the console).
"""

from __future__ import annotations

import os
import threading

from capstan_sandbox.cloud.requests import Call

ENVIRONMENT_VARIABLE = "CAPSTAN_SANDBOX_ENABLED_REGIONS"
# AWS's opt-in regions (the commercial regions not enabled by default), as AWS lists them.
OPT_IN = frozenset(
    {
        "af-south-1",
        "ap-east-1",
        "ap-east-2",
        "ap-south-2",
        "ap-southeast-3",
        "ap-southeast-4",
        "ap-southeast-5",
        "ap-southeast-6",
        "ap-southeast-7",
        "ca-west-1",
        "eu-central-2",
        "eu-south-1",
        "eu-south-2",
        "il-central-1",
        "me-central-1",
        "me-south-1",
        "mx-central-1",
    }
)
_NOT_ACCEPTED = "The security token included in the request is invalid."
# The protocol a request was sent in -> AWS's answer (status, code, message) to it.
_ANSWERS = {
    "json": (400, "UnrecognizedClientException", _NOT_ACCEPTED),
    "rest-json": (403, "UnrecognizedClientException", _NOT_ACCEPTED),
    "query": (403, "InvalidClientTokenId", _NOT_ACCEPTED),
    "ec2": (401, "AuthFailure", "AWS was not able to validate the provided access credentials"),
    "rest-xml": (400, "InvalidToken", "The provided token is malformed or otherwise invalid."),
}
_lock = threading.Lock()
_everywhere: frozenset[str] | None = None  # the environment's, read at first use
_enabled: dict[str, set[str]] = {}


def parse(value: str) -> frozenset[str]:
    """The opt-in regions a `CAPSTAN_SANDBOX_ENABLED_REGIONS` value names."""
    named = {name.strip() for name in value.split(",")} - {""}
    unknown = named - OPT_IN
    if unknown:
        raise ValueError(
            f"{ENVIRONMENT_VARIABLE}: not an opt-in region: {', '.join(sorted(unknown))} (the "
            "others are always enabled)"
        )
    return frozenset(named)


def enable(account: str, region: str) -> None:
    with _lock:
        _enabled.setdefault(account, set()).add(region)


def disable(account: str, region: str) -> None:
    with _lock:
        _enabled.get(account, set()).discard(region)


def refusal(call: Call, account: str) -> tuple[int, str, str] | None:
    """AWS's answer (status, code, message) to `call` signed for a region `account` has not
    enabled; None when the region is enabled (or not an opt-in one)."""
    global _everywhere
    if call.region not in OPT_IN:
        return None
    with _lock:
        if _everywhere is None:
            _everywhere = parse(os.environ.get(ENVIRONMENT_VARIABLE, ""))
        if call.region in _everywhere or call.region in _enabled.get(account, set()):
            return None
    if call.signing_name == "sts":
        return (
            403,
            "RegionDisabledException",
            f"STS is not activated in this region for account:{account}. Your account "
            "administrator can activate STS in this region using the IAM Console.",
        )
    return _ANSWERS.get(call.protocol, _ANSWERS["json"])
