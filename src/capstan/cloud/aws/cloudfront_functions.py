"""CloudFront Functions: the viewer-request function every static website's distribution runs.

The function, `capstan-site-index`, one per account shared by every site and preview (an account
holds 100 functions by default), serves a directory's `index.html` (`/guide/` and `/guide` both
answer `/guide/index.html`), as static site generators lay pages out and as S3 behind an OAC
does not do by itself (only the root has `DefaultRootObject`). A function is made in the
DEVELOPMENT stage and serves once published to LIVE; a distribution may only name a published
one. A site's own function `capstan-<resource id>` (sites had one each before) is deleted after
the distribution that ran it (`cloudfront`).
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from capstan.cloud.aws import names
from capstan.cloud.aws.calls import error_code, ignoring
from capstan.cloud.aws.cloudfront import client
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.errors import RetryableCloudError

FUNCTION_RUNTIME = "cloudfront-js-2.0"
# AWS's own "add index.html to request URLs that don't include a file name", looking for a file
# extension in the last path segment only (`/v1.2/guide` is a directory).
REQUEST_FUNCTION_CODE = """\
// Capstan: serve a directory's index.html, as static site generators lay pages out.
function handler(event) {
    var request = event.request;
    var uri = request.uri;
    if (uri.endsWith('/')) {
        request.uri = uri + 'index.html';
    } else if (uri.slice(uri.lastIndexOf('/') + 1).indexOf('.') === -1) {
        request.uri = uri + '/index.html';
    }
    return request;
}
"""


SHARED_FUNCTION_NAME = "capstan-site-index"


def request_function_name(resource_id: str) -> str:
    """A site's own function, as sites had before they shared one (found to delete)."""
    return f"capstan-{resource_id}"


def _function_code(cloudfront: Any, name: str, stage: str) -> tuple[bytes, str] | None:
    """The function's code and ETag in `stage` (None when it has no such stage)."""
    try:
        answer = cloudfront.get_function(Name=name, Stage=stage)
    except ClientError as error:
        if error_code(error) == "NoSuchFunctionExists":
            return None
        raise
    return answer["FunctionCode"].read(), str(answer["ETag"])


def _function_changed(name: str) -> RetryableCloudError:
    """An IfMatch that no longer names the function's version: someone changed it meanwhile."""
    return RetryableCloudError("function_changed", f"CloudFront function {name} changed meanwhile.")


def ensure_request_function(session: AwsSession) -> str:
    """The ARN of the account's shared viewer-request function, published with today's code:
    made, updated and published as far as needed (a step repeated after a crash finds the last
    one's work). Tagged as shared (`capstan:project` = `shared`): no project owns it."""
    cloudfront = client(session)
    name = SHARED_FUNCTION_NAME
    code = REQUEST_FUNCTION_CODE.encode()
    config = {
        "Comment": "Capstan: directory indexes of static websites",
        "Runtime": FUNCTION_RUNTIME,
    }
    with aws_errors():
        development = _function_code(cloudfront, name, "DEVELOPMENT")
        if development is None:
            try:
                created = cloudfront.create_function(
                    Name=name,
                    FunctionConfig=config,
                    FunctionCode=code,
                    Tags={"Items": names.tag_list(names.SHARED, SHARED_FUNCTION_NAME)},
                )
                development = code, str(created["ETag"])
            except ClientError as error:
                if error_code(error) != "FunctionAlreadyExists":
                    raise
                development = _function_code(cloudfront, name, "DEVELOPMENT")
                if development is None:
                    raise
        try:
            if development[0] != code:
                updated = cloudfront.update_function(
                    Name=name, IfMatch=development[1], FunctionConfig=config, FunctionCode=code
                )
                development = code, str(updated["ETag"])
            live = _function_code(cloudfront, name, "LIVE")
            if live is None or live[0] != code:
                cloudfront.publish_function(Name=name, IfMatch=development[1])
        except ClientError as error:
            if error_code(error) == "PreconditionFailed":  # changed since we read it
                raise _function_changed(name) from error
            raise
        described = cloudfront.describe_function(Name=name, Stage="LIVE")
    return str(described["FunctionSummary"]["FunctionMetadata"]["FunctionARN"])


def request_function_exists(session: AwsSession, resource_id: str) -> bool:
    with aws_errors():
        return (
            _function_code(client(session), request_function_name(resource_id), "DEVELOPMENT")
            is not None
        )


def delete_request_function(session: AwsSession, resource_id: str | None = None) -> None:
    """Delete a site's own function (`resource_id`) or the shared one (None), both stages;
    nothing happens when it is gone. CloudFront refuses while a distribution names it:
    `function_in_use`, raised as retryable."""
    cloudfront = client(session)
    name = SHARED_FUNCTION_NAME if resource_id is None else request_function_name(resource_id)
    with aws_errors(), ignoring("NoSuchFunctionExists"):
        etag = cloudfront.describe_function(Name=name)["ETag"]
        try:
            cloudfront.delete_function(Name=name, IfMatch=etag)
        except ClientError as error:
            if error_code(error) == "FunctionInUse":
                raise RetryableCloudError(
                    "function_in_use", f"A distribution still runs CloudFront function {name}."
                ) from error
            if error_code(error) == "PreconditionFailed":
                raise _function_changed(name) from error
            raise
