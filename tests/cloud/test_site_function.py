"""The viewer-request function every static website's distribution runs, run in Node.js (the
sandbox keeps the function but does not serve sites through it)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from capstan.cloud.aws.cloudfront_functions import REQUEST_FUNCTION_CODE

# What CloudFront would fetch from the bucket for each path a browser asks for.
CASES = {
    "/": "/index.html",
    "/guide/": "/guide/index.html",
    "/guide": "/guide/index.html",
    "/guide/install": "/guide/install/index.html",
    "/v1.2/guide": "/v1.2/guide/index.html",  # a dot in a directory is not an extension
    "/index.html": "/index.html",
    "/assets/site.css": "/assets/site.css",
    "/favicon.ico": "/favicon.ico",
}

_HARNESS = """
const uris = JSON.parse(process.argv[1]);
const seen = uris.map((uri) => handler({request: {uri: uri, querystring: {}, headers: {}}}));
console.log(JSON.stringify(seen.map((request) => request.uri)));
"""


def test_directories_are_served_their_index() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js not installed: the CloudFront function's code was not run")
    answer = subprocess.run(
        [node, "-e", REQUEST_FUNCTION_CODE + _HARNESS, json.dumps(list(CASES))],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert dict(zip(CASES, json.loads(answer.stdout), strict=True)) == CASES
