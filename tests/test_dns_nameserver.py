"""`Settings.dns_nameserver`: the DNS server Capstan asks about customers' domains, "host:port",
pointed at the sandbox's public DNS by the dev server (and its record, for dev workers) and by
the tests' settings."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from capstan import dev_server
from capstan.config import CloudMode, ConfigurationError, Settings
from capstan.dev.public_dns import nameserver_of, with_public_dns
from tests.harness import RunningServer


def _settings(**values: object) -> Settings:
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


def test_the_setting_is_host_and_port_or_none() -> None:
    assert _settings().dns_nameserver_address is None
    assert _settings(dns_nameserver="").dns_nameserver is None
    assert _settings(dns_nameserver="127.0.0.1:5353").dns_nameserver_address == ("127.0.0.1", 5353)
    assert _settings(dns_nameserver="[::1]:53").dns_nameserver_address == ("::1", 53)
    for wrong in ("127.0.0.1", "nope", "host:0", "host:70000", ":53"):
        with pytest.raises(ValidationError):
            _settings(dns_nameserver=wrong)


def test_a_dev_worker_takes_the_public_dns_from_its_server_record(tmp_path: Path) -> None:
    served = _settings(
        data_dir=tmp_path,
        cloud=CloudMode.sandbox,
        base_url="http://127.0.0.1:9",
        sandbox_cloud_url="http://127.0.0.1:8",
        dns_nameserver="127.0.0.1:5354",
    )
    dev_server.write_record(served)
    try:
        worker = dev_server.settings_for_worker(_settings(data_dir=tmp_path, cloud="sandbox"))
        assert worker.dns_nameserver == "127.0.0.1:5354"
        # One named explicitly wins over the record's.
        named = _settings(data_dir=tmp_path, cloud="sandbox", dns_nameserver="10.0.0.2:53")
        assert dev_server.settings_for_worker(named).dns_nameserver == "10.0.0.2:53"
    finally:
        dev_server.remove_record(tmp_path)
    assert dev_server.read_record(tmp_path) is None


def test_the_sandbox_cloud_says_where_its_public_dns_answers(
    server: RunningServer, sandbox_cloud_url: str
) -> None:
    nameserver = nameserver_of(sandbox_cloud_url)
    host, _, port = nameserver.rpartition(":")
    assert host == "127.0.0.1" and int(port) > 0
    # The tests' servers ask it, as the dev server does.
    assert server.settings.dns_nameserver == nameserver
    asked = with_public_dns(_settings(cloud="sandbox", sandbox_cloud_url=sandbox_cloud_url))
    assert asked.dns_nameserver == nameserver
    with pytest.raises(ConfigurationError, match="CAPSTAN_DNS_NAMESERVER"):
        nameserver_of("http://127.0.0.1:9")
