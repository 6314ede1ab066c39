"""The sandbox reads which services a signing name covers from the head of each botocore model,
and reads the same as botocore's whole model."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import botocore.session
import pytest

from capstan_sandbox.cloud import requests


def test_every_models_metadata_read_from_its_head_is_botocores() -> None:
    session = botocore.session.get_session()
    differing = [
        service
        for service in session.get_available_services()
        if requests._metadata(service) != dict(session.get_service_model(service).metadata)
    ]
    assert differing == []


def test_services_are_found_by_the_name_they_sign_with() -> None:
    assert requests._services_signed_as("elasticloadbalancing") == ("elb", "elbv2")
    assert requests._services_signed_as("ecs")[0] == "ecs"
    assert requests._services_signed_as("s3")[0] == "s3"
    assert requests._services_signed_as("no-such-signing-name") == ()


_METADATA = {
    "apiVersion": "2030-01-01",
    "endpointPrefix": "capstan-test",
    "signingName": "capstan-signing",
    "protocol": "json",
    "serviceId": "Capstan Test",
    "signatureVersion": "v4",
    "jsonVersion": "1.1",
    "targetPrefix": "CapstanTest",
}


def _operations(count: int) -> dict[str, Any]:
    return {
        f"Op{n}": {"name": f"Op{n}", "http": {"method": "POST", "requestUri": "/"}}
        for n in range(count)
    }


# Models laid out otherwise than botocore's own (say one an operator put in ~/.aws/models): the
# metadata past the head, and a shape's member named "metadata" before the model's own.
_LAYOUTS = {
    "metadata past the head": {"operations": _operations(400), "shapes": {}},
    "a member named metadata first": {
        "operations": _operations(2),
        "shapes": {
            "Thing": {"type": "structure", "members": {"metadata": {"shape": "Meta"}}},
            "Meta": {"type": "string"},
        },
    },
}


@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("layout", list(_LAYOUTS))
def test_a_model_laid_out_otherwise_is_read_for_its_own_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str, packed: bool
) -> None:
    document = json.dumps({"version": "2.0", **_LAYOUTS[layout], "metadata": _METADATA})
    assert (len(document) > requests._HEAD_BYTES) == (layout == "metadata past the head")
    folder = tmp_path / "capstan-test" / "2030-01-01"
    folder.mkdir(parents=True)
    if packed:
        (folder / "service-2.json.gz").write_bytes(gzip.compress(document.encode()))
    else:
        (folder / "service-2.json").write_text(document)
    session = botocore.session.get_session()
    session.get_component("data_loader").search_paths.insert(0, str(tmp_path))
    monkeypatch.setattr(requests, "_session", lambda: session)

    assert requests._metadata("capstan-test") == _METADATA
    assert requests._model_head("capstan-test") == document[: requests._HEAD_BYTES]
