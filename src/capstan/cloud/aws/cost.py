"""Cost Explorer: month-to-date cost of the resources carrying one `capstan:resource` tag, the
console link that shows the same figure (`console_url`), and why there may be no figure.

Cost Explorer reports by a tag only once the tag is an *active* cost allocation tag (activated
in the billing settings of the organization's management account; data follows within 24
hours): before that it answers $0 without complaint. `tag_unavailable` reads the tag's state
(`ce:ListCostAllocationTags`) so that a $0 is not shown as a fact; an account where Cost Explorer
was never enabled refuses `GetCostAndUsage`, and `month_to_date` answers the reason instead.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any
from urllib.parse import quote

from botocore.exceptions import ClientError

from capstan.cloud.aws import names
from capstan.cloud.aws.calls import error_code, utc
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession

# Cost Explorer has one endpoint, in us-east-1.
CE_REGION = "us-east-1"
# How long after a tag's activation Cost Explorer's figures by it are complete.
ACTIVATION_DELAY = timedelta(hours=24)
NOT_ENABLED = (
    "Cost Explorer is not enabled in this AWS account; enable it in the Billing and Cost "
    "Management console (its data appears within 24 hours)."
)


@dataclass(frozen=True)
class MonthToDate:
    """A month-to-date figure, or (`usd` None) the reason Cost Explorer cannot give one."""

    usd: float | None
    unavailable: str | None = None


def tag_unavailable(session: AwsSession, *, now: datetime) -> str | None:
    """Why Cost Explorer cannot report by the `capstan:resource` tag yet, or None when it can:
    the tag is not an active cost allocation tag, or was activated less than a day ago."""
    client: Any = session.client("ce", region=CE_REGION)
    with aws_errors():
        try:
            answer = client.list_cost_allocation_tags(TagKeys=[names.RESOURCE_TAG])
        except ClientError as error:
            # Refused for the account rather than the role (a member account may not see the
            # billing settings, or Cost Explorer is off): GetCostAndUsage tells which.
            if _not_enabled(error):
                return None
            raise
    found = [
        tag for tag in answer.get("CostAllocationTags", []) if tag.get("Type") != "AWSGenerated"
    ]
    if not found or found[0].get("Status") != "Active":
        return (
            f"The tag {names.RESOURCE_TAG} is not an active cost allocation tag in this AWS "
            "account: activate it under Cost allocation tags in the Billing console of the "
            "organization's management account; Cost Explorer reports by it within 24 hours."
        )
    activated = found[0].get("LastUpdatedDate")
    if activated:
        ready = _timestamp(activated) + ACTIVATION_DELAY
        if ready > now:
            return (
                f"The cost allocation tag {names.RESOURCE_TAG} was activated less than 24 "
                f"hours ago; Cost Explorer reports by it from {ready:%Y-%m-%d %H:%M} UTC."
            )
    return None


def _timestamp(value: Any) -> datetime:
    return utc(value if isinstance(value, datetime) else datetime.fromisoformat(str(value)))


def _not_enabled(error: ClientError) -> bool:
    """Cost Explorer refusing an account that never enabled it (not an IAM refusal, which
    names the action it denies and stays a cloud error)."""
    code = error_code(error)
    if code == "DataUnavailableException":
        return True
    message = str(error.response.get("Error", {}).get("Message", ""))
    return code == "AccessDeniedException" and "not authorized to perform" not in message


def month_to_date(session: AwsSession, resource_id: str, *, today: date) -> MonthToDate:
    """`month_to_date_usd`, or the reason when the account's Cost Explorer is off."""
    with aws_errors():
        try:
            return MonthToDate(_month_to_date_usd(session, resource_id, today=today))
        except ClientError as error:
            if _not_enabled(error):
                return MonthToDate(None, NOT_ENABLED)
            raise


def _month_to_date_usd(session: AwsSession, resource_id: str, *, today: date) -> float:
    start = today.replace(day=1)
    # End is exclusive and must be after Start: tomorrow covers today, also on the 1st.
    end = today + timedelta(days=1)
    client: Any = session.client("ce", region=CE_REGION)
    total = 0.0
    token: str | None = None
    while True:
        arguments: dict[str, Any] = {
            "TimePeriod": {"Start": start.isoformat(), "End": end.isoformat()},
            "Granularity": "MONTHLY",
            "Metrics": ["UnblendedCost"],
            "Filter": {
                "Tags": {
                    "Key": names.RESOURCE_TAG,
                    "Values": [resource_id],
                    "MatchOptions": ["EQUALS"],
                }
            },
        }
        if token:
            arguments["NextPageToken"] = token
        answer = client.get_cost_and_usage(**arguments)
        for period in answer.get("ResultsByTime", []):
            amount = period.get("Total", {}).get("UnblendedCost", {}).get("Amount")
            if amount is not None:
                total += float(amount)
        token = answer.get("NextPageToken")
        if not token:
            break
    return total


# The AWS console's host per partition (Cost Explorer's console lives in the first region).
_CONSOLES = {
    "aws": "https://us-east-1.console.aws.amazon.com",
    "aws-cn": "https://console.amazonaws.cn",
    "aws-us-gov": "https://console.amazonaws-us-gov.com",
}


def console_url(
    resource_id: str, *, today: date, partition: str = "aws", tag_key: str = names.RESOURCE_TAG
) -> str:
    """The Cost Explorer page of the console filtered to `tag_key` = `resource_id`, month to
    date, daily, grouped by service: where a person checks what `month_to_date_usd` answered.

    Cost Explorer keeps its view in the URL fragment; the filter is the console's own JSON (a
    tag filter is dimension `TagKey` with the key as its `growableValue`). The tag must be
    activated as a cost allocation tag in the account's billing settings to show up there.
    """
    tag_filter = [
        {
            "dimension": {"id": "TagKey", "displayValue": "Tag"},
            "operator": "INCLUDES",
            "values": [{"value": resource_id, "displayValue": resource_id}],
            "growableValue": {"value": tag_key, "displayValue": tag_key},
        }
    ]
    view = {
        "chartStyle": "STACK",
        "costAggregate": "unBlendedCost",
        "startDate": today.replace(day=1).isoformat(),
        "endDate": today.isoformat(),
        "excludeForecasting": "false",
        "filter": json.dumps(tag_filter, separators=(",", ":")),
        "granularity": "Daily",
        "groupBy": json.dumps(["Service"]),
        "historicalRelativeRange": "MONTH_TO_DATE",
        "futureRelativeRange": "CUSTOM",
        "isDefault": "false",
        "showOnlyUncategorized": "false",
        "showOnlyUntagged": "false",
        "useNormalizedUnits": "false",
    }
    fragment = "&".join(f"{key}={quote(value, safe=':,')}" for key, value in view.items())
    host = _CONSOLES.get(partition, _CONSOLES["aws"])
    return f"{host}/costmanagement/home#/cost-explorer?{fragment}"
