"""What can go wrong in the cloud, in Capstan's terms (nothing boto3-shaped leaks out):

    CloudError (code, message)
    ├── RetryableCloudError   throttling, timeouts, the provider's own faults: try again later
    └── TerminalCloudError    access denied, invalid input, missing resources: retrying won't help
        └── QuotaExceededError    an account quota AWS sets is reached: retrying won't help until
                                  something is deleted or the quota is raised

`code` is a stable machine code in snake_case (`access_denied`, `throttling`,
`cloud_unreachable`...); `message` is a sentence a person can act on, in Capstan's words: it is
what a resource's `error` and a response show. `detail` is the cloud's own words, when it said
any: they may quote parameters, ARNs and account ids, so they go to the log (`str(error)`) and
never into a response.
"""

from __future__ import annotations


class CloudError(Exception):
    def __init__(self, code: str, message: str, *, detail: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.detail = detail

    def __str__(self) -> str:
        return self.message if self.detail is None else f"{self.message} AWS: {self.detail}"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(code={self.code!r}, message={self.message!r}, "
            f"detail={self.detail!r})"
        )


class RetryableCloudError(CloudError):
    """The call may succeed if made again later (the reconciler requeues with backoff)."""


class TerminalCloudError(CloudError):
    """The call will fail the same way until something outside Capstan changes."""


class QuotaExceededError(TerminalCloudError):
    """A quota of the AWS account is reached (`quota_exceeded`). Terminal for the call that met
    it, but not forever: it holds until a resource is deleted or the quota raised, so what failed
    on one may try again later (a resync) where a permanent refusal would not."""

    def __init__(self, message: str, *, detail: str | None = None) -> None:
        super().__init__("quota_exceeded", message, detail=detail)


__all__ = ["CloudError", "QuotaExceededError", "RetryableCloudError", "TerminalCloudError"]
