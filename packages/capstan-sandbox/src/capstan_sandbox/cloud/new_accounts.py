"""What AWS holds back from some new accounts until AWS Support has verified them.

Seen by many in a new account's first stack (and quoted here as AWS answers):

- CloudFront refuses a distribution: `AccessDenied` (403), "Your account must be verified before
  you can add new CloudFront resources. To verify your account, please contact AWS Support
  (https://console.aws.amazon.com/support/home#/) and include this error message."
- Elastic Load Balancing refuses a load balancer: `OperationNotPermitted` (400), "This AWS
  account currently does not support creating load balancers. For more information, please
  contact AWS Support."

Not every new account is held back, and nothing in an API tells which is: the sandbox's accounts
are verified unless a test holds one back (`hold_back`); `verify` lifts it, as AWS Support does.
The refusal comes after the call is authorized, as AWS's does (`refusal`, from the authorizer).
"""

from __future__ import annotations

import threading

from capstan_sandbox.cloud.requests import Call

_CLOUDFRONT = (
    403,
    "AccessDenied",
    "Your account must be verified before you can add new CloudFront resources. To verify your "
    "account, please contact AWS Support (https://console.aws.amazon.com/support/home#/) and "
    "include this error message.",
)
_LOAD_BALANCERS = (
    400,
    "OperationNotPermitted",
    "This AWS account currently does not support creating load balancers. For more "
    "information, please contact AWS Support.",
)
# (IAM prefix, operation) -> AWS's answer to it from a held-back account.
_HELD_BACK = {
    ("cloudfront", "CreateDistribution"): _CLOUDFRONT,
    ("cloudfront", "CreateDistributionWithTags"): _CLOUDFRONT,
    ("elasticloadbalancing", "CreateLoadBalancer"): _LOAD_BALANCERS,
}
_lock = threading.Lock()
_held_back: set[str] = set()


def hold_back(account: str) -> None:
    """From now on, `account` is refused what AWS refuses an account not yet verified."""
    with _lock:
        _held_back.add(account)


def verify(account: str) -> None:
    with _lock:
        _held_back.discard(account)


def refusal(call: Call, prefix: str, account: str) -> tuple[int, str, str] | None:
    """AWS's answer (status, code, message) to an authorized call `account` may not make yet."""
    answer = _HELD_BACK.get((prefix, call.operation))
    if answer is None:
        return None
    with _lock:
        return answer if account in _held_back else None
