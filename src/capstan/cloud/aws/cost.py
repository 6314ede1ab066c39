"""Cost Explorer: month-to-date cost of the resources carrying one `capstan:resource` tag, and
the console link that shows the same figure (`console_url`)."""

from __future__ import annotations

import json
from datetime import date, timedelta
from typing import Any
from urllib.parse import quote

from capstan.cloud.aws import names
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession

# Cost Explorer has one endpoint, in us-east-1.
CE_REGION = "us-east-1"


def month_to_date_usd(session: AwsSession, resource_id: str, *, today: date) -> float:
    start = today.replace(day=1)
    # End is exclusive and must be after Start: tomorrow covers today, also on the 1st.
    end = today + timedelta(days=1)
    client: Any = session.client("ce", region=CE_REGION)
    total = 0.0
    token: str | None = None
    with aws_errors():
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
