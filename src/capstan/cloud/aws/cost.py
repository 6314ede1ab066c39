"""Cost Explorer: month-to-date cost of the resources carrying one `capstan:resource` tag."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

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
