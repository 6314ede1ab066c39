"""The OpenAPI 3.1 document at /docs/api describes every operation and both security schemes."""

from __future__ import annotations

from fastapi.routing import APIRoute, iter_route_contexts

from tests.harness import Org, RunningServer


def test_document_is_openapi_3_1_version_0_1_0(server: RunningServer) -> None:
    with server.client() as client:
        document = client.get("/docs/api").json()
    assert document["openapi"].startswith("3.1")
    assert document["info"]["version"] == "0.1.0"
    schemes = document["components"]["securitySchemes"]
    assert schemes["bearer"] == {**schemes["bearer"], "type": "http", "scheme": "bearer"}
    assert schemes["session"]["in"] == "cookie"
    assert schemes["csrf"] == {
        **schemes["csrf"],
        "type": "apiKey",
        "in": "header",
        "name": "X-CSRF-Token",
    }
    assert {"bearer": []} in document["security"]


def test_every_operation_is_described(server: RunningServer) -> None:
    with server.client() as client:
        document = client.get("/docs/api").json()
    operations = {
        (method.upper(), path): operation
        for path, item in document["paths"].items()
        for method, operation in item.items()
    }
    described = 0
    for context in iter_route_contexts(server.app.routes):
        route = context.original_route
        if not isinstance(route, APIRoute) or not route.include_in_schema:
            continue
        described += 1
        for method in route.methods - {"HEAD"}:
            operation = operations.get((method, context.path))
            assert operation is not None, (method, context.path)
            assert operation.get("summary"), (method, route.path)
            success = [code for code in operation["responses"] if code[0] in "23"]
            assert success, (method, route.path)
            for code in success:
                if code[0] == "2" and code != "204" and route.path.startswith("/api/"):
                    content = operation["responses"][code].get("content", {})
                    assert "application/json" in content, (method, route.path, code)
                    assert content["application/json"].get("schema"), (method, route.path)
            assert "400" in operation["responses"]
            error = operation["responses"]["400"]["content"]["application/json"]["schema"]
            assert error == {"$ref": "#/components/schemas/ErrorBody"}
            if method in {"POST", "PUT", "PATCH"} and route.body_field is not None:
                assert operation["requestBody"]["content"]["application/json"]["schema"]
    assert described >= 10
    assert "HTTPValidationError" not in str(document)


def test_docs_page_is_browsable(server: RunningServer) -> None:
    with server.client() as client:
        page = client.get("/docs")
    assert page.status_code == 200
    assert "/docs/api" in page.text


def _document(server: RunningServer) -> dict:
    with server.client() as client:
        document: dict = client.get("/docs/api").json()
    return document


def test_statuses_beyond_the_common_ones_are_documented(server: RunningServer) -> None:
    paths = _document(server)["paths"]
    for path, item in paths.items():
        for method, operation in item.items():
            if "requestBody" in operation:
                assert "413" in operation["responses"], (method, path)
    assert "429" in paths["/api/session"]["post"]["responses"]
    assert "Retry-After" in paths["/api/session"]["post"]["responses"]["429"]["headers"]
    assert "413" in paths["/api/git_host/webhooks"]["post"]["responses"]
    logs = "/api/projects/{project_id}/web_servers/{service_id}/logs"
    assert "502" in paths[logs]["get"]["responses"]
    assert "502" not in paths["/api/api_tokens"]["get"]["responses"]


def test_ranges_and_enums_are_exact(server: RunningServer) -> None:
    with server.client() as client:
        text = client.get("/docs/api").text
    document = _document(server)
    # int64's maximum as an integer literal, never a float that rounds above it.
    assert '"maximum":9223372036854775807' in text.replace(" ", "")
    assert "9.223372036854776e+18" not in text
    created = document["components"]["schemas"]["WebServerCreate"]["properties"]["cpu"]
    assert created["enum"] == [256, 512, 1024, 2048, 4096]
    update = document["components"]["schemas"]["WebServerUpdate"]["properties"]
    assert update["cpu"]["enum"] == [256, 512, 1024, 2048, 4096]
    assert "null" not in str(update["memory"]), "memory may be omitted, not null"
    assert "null" in str(update["build_command"]), "build_command may be cleared with null"


def test_a_405_allows_every_method_of_its_path(org: Org) -> None:
    response = org.api.put("/api/projects/prj_missing", json={})
    assert response.status_code == 405
    assert response.json()["error"] == "method_not_allowed"
    allowed = {method.strip() for method in response.headers["allow"].split(",")}
    assert {"GET", "PATCH", "DELETE"} <= allowed
