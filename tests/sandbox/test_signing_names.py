"""The sandbox reads which services a signing name covers from the head of each botocore model,
and reads the same as botocore's whole model."""

from __future__ import annotations

import gzip
from pathlib import Path

import botocore.session
import pytest

from capstan.sandbox.cloud import requests


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


@pytest.mark.parametrize("packed", [False, True])
def test_a_model_whose_head_does_not_hold_its_metadata_is_loaded_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, packed: bool
) -> None:
    """A model in a search path of its own (as ~/.aws/models) whose metadata comes after its
    operations: the head read finds none, and the whole model tells."""
    operations = ",".join(
        f'"Op{n}":{{"name":"Op{n}","http":{{"method":"POST","requestUri":"/"}}}}'
        for n in range(400)
    )
    document = (
        '{"version":"2.0","operations":{' + operations + '},"shapes":{},'
        '"metadata":{"apiVersion":"2030-01-01","endpointPrefix":"capstan-test",'
        '"signingName":"capstan-signing","protocol":"json","serviceId":"Capstan Test",'
        '"signatureVersion":"v4","jsonVersion":"1.1","targetPrefix":"CapstanTest"}}'
    )
    assert len(document) > requests._HEAD_BYTES
    folder = tmp_path / "capstan-test" / "2030-01-01"
    folder.mkdir(parents=True)
    if packed:
        (folder / "service-2.json.gz").write_bytes(gzip.compress(document.encode()))
    else:
        (folder / "service-2.json").write_text(document)
    session = botocore.session.get_session()
    session.get_component("data_loader").search_paths.insert(0, str(tmp_path))
    monkeypatch.setattr(requests, "_session", lambda: session)

    assert requests._metadata("capstan-test") == {
        "apiVersion": "2030-01-01",
        "endpointPrefix": "capstan-test",
        "signingName": "capstan-signing",
        "protocol": "json",
        "serviceId": "Capstan Test",
        "signatureVersion": "v4",
        "jsonVersion": "1.1",
        "targetPrefix": "CapstanTest",
    }
    assert requests._model_head("capstan-test").startswith('{"version":"2.0","operations"')
