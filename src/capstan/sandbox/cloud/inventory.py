"""Moved to `capstan.cloud.aws.inventory` (it knows no sandbox: `make aws-smoke` runs it against
AWS too); this name stays for tests written before the move, on branches not merged yet."""

from capstan.cloud.aws.inventory import Found, capstan_resources, dns_records

__all__ = ["Found", "capstan_resources", "dns_records"]
