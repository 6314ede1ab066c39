"""What can go wrong in the cloud, in Capstan's terms (nothing boto3-shaped leaks out):

    CloudError (code, message)
    ├── RetryableCloudError   throttling, timeouts, the provider's own faults: try again later
    └── TerminalCloudError    access denied, invalid input, missing resources: retrying won't help

`code` is a stable machine code in snake_case (`access_denied`, `throttling`,
`cloud_unreachable`...); `message` is a sentence a person can act on.
"""

from __future__ import annotations


class CloudError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r})"


class RetryableCloudError(CloudError):
    """The call may succeed if made again later (the reconciler requeues with backoff)."""


class TerminalCloudError(CloudError):
    """The call will fail the same way until something outside Capstan changes."""


__all__ = ["CloudError", "RetryableCloudError", "TerminalCloudError"]
