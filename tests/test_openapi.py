"""The OpenAPI 3.1 document at /docs/api describes every operation and both security schemes."""

from __future__ import annotations

from fastapi.routing import APIRoute, iter_route_contexts

from tests.harness import RunningServer


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
