"""Model access in a customer's AWS account: the driver model access reads Bedrock through.

`ModelAccessDriver(customer)` answers the region's catalog — on-demand models and system
inference profiles (a live read in the organization's account); `invoke_statements` is the
task-role policy that lets a project's services invoke exactly the allowed models. Like every
driver, its calls block (run them through `Cloud.run`) and raise only `RetryableCloudError` or
`TerminalCloudError`.
"""

from __future__ import annotations

from typing import Any

from capstan.cloud.aws import bedrock, iam
from capstan.cloud.aws.bedrock import FoundationModel
from capstan.cloud.aws.session import AwsSession


def regions() -> frozenset[str]:
    """The regions Bedrock is offered in."""
    return bedrock.regions()


def invoke_statements(region: str, account_id: str, model_ids: list[str]) -> list[dict[str, Any]]:
    """IAM statements allowing invoke on exactly `model_ids` (models and inference profiles of
    `account_id`) in `region`."""
    return bedrock.invoke_statements(iam.partition_of(region), region, account_id, model_ids)


class ModelAccessDriver:
    """Synchronous boto3 work in the organization's account (`customer`: the assumed role)."""

    def __init__(self, customer: AwsSession) -> None:
        self._customer = customer

    def foundation_models(self) -> list[FoundationModel]:
        """The models and inference profiles a task role can invoke in the session's region."""
        return bedrock.foundation_models(self._customer, self._customer.endpoint.region)


__all__ = ["FoundationModel", "ModelAccessDriver", "invoke_statements", "regions"]
