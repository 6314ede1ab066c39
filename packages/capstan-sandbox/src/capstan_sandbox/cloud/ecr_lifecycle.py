"""ECR lifecycle policies, applied: moto stores a repository's policy (and validates it) but never
expires an image by it. `expire(account, region, now=...)` does what ECR does at its daily pass:
for each repository with a policy, each image is claimed by the first rule (by `rulePriority`)
whose tag selection it matches — `tagged` with a tag starting with one of `tagPrefixList` (or
matching `tagPatternList`, `*` a wildcard), `untagged`, or `any` — and a rule expires, of the
images it claimed, those beyond the newest `countNumber` (`imageCountMoreThan`) or pushed more
than `countNumber` days before `now` (`sinceImagePushed`). An image a rule claimed is never
expired by a lower one. Tests call it with a `now` in the future instead of waiting days.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from moto.ecr.models import Image, Repository, ecr_backends


def _matches(rule: dict[str, Any], image: Image) -> bool:
    selection = rule.get("selection", {})
    status = selection.get("tagStatus")
    tags = [tag for tag in image.image_tags if tag]
    if status == "any":
        return True
    if status == "untagged":
        return not tags
    prefixes = selection.get("tagPrefixList") or []
    patterns = [
        re.compile("^" + ".*".join(re.escape(part) for part in pattern.split("*")) + "$")
        for pattern in selection.get("tagPatternList") or []
    ]
    return any(
        any(tag.startswith(prefix) for prefix in prefixes)
        or any(pattern.match(tag) for pattern in patterns)
        for tag in tags
    )


def _expired(rule: dict[str, Any], claimed: list[Image], now: datetime) -> list[Image]:
    selection = rule.get("selection", {})
    count = int(selection.get("countNumber", 0))
    if selection.get("countType") == "imageCountMoreThan":
        newest_first = sorted(claimed, key=lambda image: image.image_pushed_at, reverse=True)
        return newest_first[count:]
    cutoff = now.timestamp() - count * 86400
    return [image for image in claimed if image.image_pushed_at < cutoff]


def apply(repository: Repository, now: datetime) -> list[str]:
    """Expire `repository`'s images by its policy; the digests removed."""
    text = getattr(repository, "lifecycle_policy", None)
    if not text:
        return []
    rules = sorted(json.loads(text).get("rules", []), key=lambda rule: rule["rulePriority"])
    unclaimed = list(repository.images)
    gone: list[Image] = []
    for rule in rules:
        claimed = [image for image in unclaimed if _matches(rule, image)]
        unclaimed = [image for image in unclaimed if image not in claimed]
        if rule.get("action", {}).get("type") == "expire":
            gone += _expired(rule, claimed, now)
    repository.images = [image for image in repository.images if image not in gone]
    return [image.image_digest for image in gone]


def expire(account_id: str, region: str, *, now: datetime) -> dict[str, list[str]]:
    """ECR's lifecycle pass over every repository of the account in `region`: the digests
    removed, by repository name."""
    backend = ecr_backends[account_id][region]
    removed = {name: apply(repository, now) for name, repository in backend.repositories.items()}
    return {name: digests for name, digests in removed.items() if digests}
