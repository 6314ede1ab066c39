"""IAM's quotas on the size of policy documents, counted as IAM counts them: characters, white
space not counted (a quota over them is refused with `LimitExceeded`)."""

from __future__ import annotations

# All of one role's inline policies together.
ROLE_INLINE_CHARS = 10_240
# One managed policy's document.
MANAGED_POLICY_CHARS = 6_144


def policy_chars(text: str) -> int:
    """A policy document's size as IAM counts it against its quotas."""
    return sum(1 for char in text if not char.isspace())
