"""A service's URL, built in one place (`capstan.apps.service.url`): in AWS the scheme follows the
project's certificate; in the sandbox it is the hostname at the dev server's own scheme and port,
where the dev server answers for it."""

from __future__ import annotations

from typing import Any

import pytest

from capstan.apps.service import STATIC_WEBSITE, WEB_SERVER, url
from capstan.config import CloudMode, Settings
from capstan.projects.models import Project

DOMAIN = "apps.example.com"


def _settings(**values: Any) -> Settings:
    return Settings(_env_file=None, domain=DOMAIN, **values)  # type: ignore[call-arg]


def _project(certificate_status: str | None = None) -> Project:
    return Project(hostname_suffix="shop", certificate_status=certificate_status)


def test_in_aws_the_scheme_follows_the_certificate_and_no_port_is_written() -> None:
    aws = _settings(cloud=CloudMode.aws, base_url="https://capstan.example.com:8443")
    assert url("web", _project(), aws) == "http://web.shop.apps.example.com"
    assert url("web", _project("pending_validation"), aws) == "http://web.shop.apps.example.com"
    assert url("web", _project("issued"), aws) == "https://web.shop.apps.example.com"
    assert url("docs", _project(), aws, STATIC_WEBSITE) == "https://docs.shop.apps.example.com"


@pytest.mark.parametrize("certificate_status", [None, "issued"])
def test_in_the_sandbox_a_url_names_the_dev_servers_port(certificate_status: str | None) -> None:
    dev = _settings(cloud=CloudMode.sandbox, base_url="http://127.0.0.1:8000")
    project = _project(certificate_status)
    assert url("web", project, dev, WEB_SERVER) == "http://web.shop.apps.example.com:8000"
    assert url("docs", project, dev, STATIC_WEBSITE) == "http://docs.shop.apps.example.com:8000"


def test_in_the_sandbox_a_default_port_is_not_written() -> None:
    plain = _settings(cloud=CloudMode.sandbox, base_url="http://dev.example.com")
    assert url("web", _project(), plain) == "http://web.shop.apps.example.com"
    # Behind a proxy that terminates TLS for the dev server, the URL is https too.
    proxied = _settings(cloud=CloudMode.sandbox, base_url="https://dev.example.com:443")
    assert url("web", _project(), proxied) == "https://web.shop.apps.example.com"
