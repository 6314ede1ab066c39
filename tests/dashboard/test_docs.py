"""The README and docs/api.md stay true: docs/api.md lists every route the OpenAPI document serves
(the three service kinds share one table, as `{kind}`), and the README's links stay inside the
repository."""

from __future__ import annotations

import re
from pathlib import Path

from tests.harness import RunningServer

API_DOC = Path(__file__).parents[2] / "docs" / "api.md"
KINDS = re.compile(r"^/api/projects/\{project_id\}/(web_servers|workers|static_websites)")


def test_docs_api_lists_every_route_of_the_openapi_document(server: RunningServer) -> None:
    with server.client() as anonymous:
        document = anonymous.get("/docs/api").json()
    served = {
        (method.upper(), KINDS.sub("/api/projects/{project_id}/{kind}", path))
        for path, operations in document["paths"].items()
        for method in operations
        if method in {"get", "post", "put", "patch", "delete"}
    }
    listed = set(
        re.findall(r"^\| (GET|POST|PUT|PATCH|DELETE) \| `([^`]+)` \|", API_DOC.read_text(), re.M)
    )
    assert served - listed == set(), "routes missing from docs/api.md"
    assert listed - served == set(), "docs/api.md lists routes the server does not serve"


def test_every_link_of_the_readme_resolves_inside_the_repository() -> None:
    root = API_DOC.parents[1]
    readme = (root / "README.md").read_text()
    targets = re.findall(r"\]\(([^)#\s]+)", readme)
    assert "docs/api.md" in targets
    outside = [t for t in targets if re.match(r"^[a-z]+:", t) or t.startswith("..")]
    assert outside == []
    missing = [t for t in targets if not (root / t).exists()]
    assert missing == []
