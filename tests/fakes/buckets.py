"""An in-memory bucket cloud for unit tests of the bucket reconciler: the buckets `BucketDriver`
would make in one account, answering its calls with its contract (an idempotent `ensure`,
`remove` until True, S3's `bucket_not_empty` when an object lands while the bucket is emptied).

What it does not emulate: S3's settings (public access, encryption, ownership, metrics), IAM,
regions' rules, CloudWatch — `BucketDriver`'s and the sandbox's, covered end to end in
`tests/buckets`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from capstan.cloud.errors import TerminalCloudError


@dataclass
class FakeBuckets:
    """One account's buckets by name (their project and bucket id). `refusal`: an error every
    call raises until it is cleared; `late_writes`: how many removals find an object written
    after the bucket was emptied."""

    buckets: dict[str, tuple[str, str]] = field(default_factory=dict)
    refusal: TerminalCloudError | None = None
    late_writes: int = 0
    calls: list[str] = field(default_factory=list)

    def ensure(self, bucket_name: str, project_id: str, bucket_id: str) -> None:
        self._call("ensure")
        self.buckets[bucket_name] = (project_id, bucket_id)

    def remove(self, bucket_name: str) -> bool:
        self._call("remove")
        if bucket_name in self.buckets and self.late_writes:
            self.late_writes -= 1
            raise TerminalCloudError(
                "bucket_not_empty", "The bucket you tried to delete is not empty."
            )
        self.buckets.pop(bucket_name, None)
        return bucket_name not in self.buckets

    def _call(self, name: str) -> None:
        self.calls.append(name)
        if self.refusal is not None:
            raise self.refusal
