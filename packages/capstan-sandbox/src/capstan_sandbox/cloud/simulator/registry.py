"""What a build's `docker push` does in ECR: as the build's service role (which must be allowed
each call the push makes on the repository, or the push is `denied` in ECR's words), it puts the
image's manifest in the repository, once per tag."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from moto.ecr.models import ecr_backends

from capstan_sandbox.cloud.role_checks import RoleRequests
from capstan_sandbox.cloud.simulator import build_logs

# What `docker push` asks of ECR, in order.
_PUSH = (
    "ecr:BatchCheckLayerAvailability",
    "ecr:InitiateLayerUpload",
    "ecr:UploadLayerPart",
    "ecr:CompleteLayerUpload",
    "ecr:PutImage",
)


def push_denial(account_id: str, build: dict[str, Any], image_uri: str) -> str | None:
    """Why the build's service role may not push `image_uri` (ECR's words), or None. An image
    bound elsewhere than the build's own account's ECR is not judged."""
    host, _, rest = image_uri.partition("/")
    if not host.startswith(f"{account_id}.dkr.ecr."):
        return None
    region = host.split(".")[3]
    role = RoleRequests(account_id, str(build.get("serviceRole") or ""))
    repository = rest.split("@")[0].rsplit(":", 1)[0]
    arn = f"arn:{role.partition}:ecr:{region}:{account_id}:repository/{repository}"
    session = build_logs.role_session(build)
    return next(
        (
            refused
            for action in _PUSH
            if (refused := role.refusal(action, arn, "repository", session))
        ),
        None,
    )


def push(account_id: str, region: str, image_uri: str, content: bytes) -> None:
    path, _, tag = image_uri.partition("/")[2].rpartition(":")
    layer = hashlib.sha256(content).hexdigest()
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "config": {
            "mediaType": "application/vnd.docker.container.image.v1+json",
            "size": 1469,
            "digest": f"sha256:{hashlib.sha256(layer.encode()).hexdigest()}",
        },
        "layers": [
            {
                "mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip",
                "size": len(content),
                "digest": f"sha256:{layer}",
            }
        ],
    }
    backend = ecr_backends[account_id][region]
    if path not in backend.repositories:
        raise RuntimeError(f"name unknown: the repository '{path}' does not exist")
    repository = backend.repositories[path]
    if any(tag in (image.image_tags or []) for image in list(repository.images)):
        return
    backend.put_image(
        path,
        json.dumps(manifest),
        tag,
        "application/vnd.docker.distribution.manifest.v2+json",
    )
