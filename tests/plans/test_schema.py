"""The published JSON Schema of capstan.yaml is the document model's, and the issue's example file
is valid by it."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from capstan.plans.schemas import CapstanFile, capstan_file_schema

DOCS = Path(__file__).resolve().parents[2] / "docs"
EXAMPLE = """
web_servers:
  api:
    repo: acme/shop
    branch: main
    cpu: 512
    memory: 1024
    health_path: /healthz
    auto_deploy: true
    environment:
      LOG_LEVEL: info
      STRIPE_KEY: {from_env: STRIPE_KEY}
workers:
  jobs: {repo: acme/shop, branch: main, start_command: python -m jobs, cpu: 256, memory: 512}
static_websites:
  docs: {repo: acme/docs, branch: main, build_command: npm ci && npm run build, publish_dir: dist}
caches:
  sessions: {storage_limit_mb: 256}
buckets: [uploads]
model_access: [amazon.titan-text-express-v1]
"""


def test_the_published_schema_is_current() -> None:
    published = json.loads((DOCS / "capstan.schema.json").read_text())
    assert published == capstan_file_schema(), (
        "docs/capstan.schema.json is stale: python -m capstan.plans.schemas > "
        "docs/capstan.schema.json"
    )


def test_the_example_file_is_valid_with_the_api_defaults() -> None:
    document = CapstanFile.model_validate(yaml.safe_load(EXAMPLE))
    jobs = document.workers["jobs"].model_dump()
    assert jobs["auto_deploy"] is False  # the API's default
    assert document.static_websites["docs"].model_dump()["auto_deploy"] is False
    assert document.model_access == ["amazon.titan-text-express-v1"]
    secret = document.web_servers["api"].model_dump()["environment"]["STRIPE_KEY"]
    assert secret == {"from_env": "STRIPE_KEY", "value": None}
