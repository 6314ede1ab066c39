"""How many AWS API calls the sandbox cloud has answered, for benchmarks and operators.

A WSGI middleware in front of moto counts every request it passes on, by AWS service (the
service of the request's SigV4 credential scope), and answers `GET /_capstan/stats` itself:

    {"calls": 1234, "by_service": {"ecs": 400, "elasticloadbalancing": 210, ...},
     "by_operation": {"ecs:DescribeServices": 120, ...},
     "by_account": {"123456789012": {"ecs:DescribeServices": 40, ...}, ...}}

`by_account` counts the calls of assumed-role sessions by the role's account (what a test that
shares the sandbox with other work counts as its own); other callers are in the totals only.

The operation is the one the sandbox's authorizer read from the request (`OPERATION`, set in the
WSGI environ by `authorization.Authorizer`, which runs inside this counter).

Only calls made over HTTP are counted — what clients (Capstan's driver, a test, the AWS CLI)
asked for; the simulator works on moto's backends in-process and is not counted.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

STATS_PATH = "/_capstan/stats"
# The WSGI environ key under which the authorizer leaves "<service>:<Operation>".
OPERATION = "capstan.operation"
# ...and the account of the assumed-role session that signed it, when it is one.
ACCOUNT = "capstan.account"
# "AWS4-HMAC-SHA256 Credential=AKID/20250101/us-east-1/ecs/aws4_request, ..."
_SCOPE = re.compile(r"Credential=[^/]+/\d{8}/[^/]+/([^/]+)/aws4_request")

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
# Other parts of the sandbox watch requests: a watcher gets each request's service and WSGI
# environ and answers the `start_response` to use (its own wrapper, to see the answer too, or the
# one it was given). S3 request metrics are counted this way (`s3_metrics`).
Watcher = Callable[[str, dict[str, Any], Callable[..., Any]], Callable[..., Any]]
WATCHERS: list[Watcher] = []


class CallCounter:
    """Counts the requests that reach `app`; serves the counts at `STATS_PATH`."""

    def __init__(self, app: WsgiApp) -> None:
        self._app = app
        self._lock = threading.Lock()
        self._by_service: Counter[str] = Counter()
        self._by_operation: Counter[str] = Counter()
        self._by_account: dict[str, Counter[str]] = {}

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            by_service = dict(sorted(self._by_service.items()))
            by_operation = dict(sorted(self._by_operation.items()))
            by_account = {
                account: dict(sorted(counts.items()))
                for account, counts in sorted(self._by_account.items())
            }
        return {
            "calls": sum(by_service.values()),
            "by_service": by_service,
            "by_operation": by_operation,
            "by_account": by_account,
        }

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == STATS_PATH and environ.get("REQUEST_METHOD") == "GET":
            body = json.dumps(self.snapshot()).encode()
            start_response(
                "200 OK",
                [("Content-Type", "application/json"), ("Content-Length", str(len(body)))],
            )
            return [body]
        scope = _SCOPE.search(environ.get("HTTP_AUTHORIZATION", ""))
        service = scope.group(1) if scope else "unsigned"
        with self._lock:
            self._by_service[service] += 1
        for watch in WATCHERS:
            start_response = watch(service, environ, start_response)
        answer = self._app(environ, start_response)
        operation = environ.get(OPERATION)
        if operation:
            account = environ.get(ACCOUNT)
            with self._lock:
                self._by_operation[operation] += 1
                if account:
                    self._by_account.setdefault(account, Counter())[operation] += 1
        return answer
