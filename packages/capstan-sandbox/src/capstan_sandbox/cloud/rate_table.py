"""Every service's documented API rates by botocore's service name (`LIMITS`), the tables of
the services with few rows (Route 53, RDS, Systems Manager, CloudWatch Logs, ECR, ACM, Secrets
Manager, CloudWatch), and how a service refuses a throttled call (`answer_for`), including one
with no documented rate that a test throttles. The model and the larger tables are in
`rate_limits`."""

from __future__ import annotations

from capstan_sandbox.cloud.rate_limits import (
    ACM_PAGE,
    CLOUDWATCH_PAGE,
    EC2,
    ECR_PAGE,
    ECS,
    ELBV2,
    LOGS_PAGE,
    RATE_EXCEEDED,
    RDS_PAGE,
    ROUTE53_PAGE,
    SECRETS_PAGE,
    SSM_PAGE,
    Answer,
    Limits,
    Rate,
    Row,
    _every,
    _named,
)
from capstan_sandbox.cloud.requests import Call

# -- Route 53 ----------------------------------------------------------------------------------

# "All requests: Five requests per second per AWS account" (the Route 53 quotas page, and AWS's
# knowledge-center article on avoiding its throttling errors). Route 53's newer throttling page
# documents an account bucket of 50 refilled at 10 a second: a driver that keeps within five a
# second keeps within both (docs/decisions/0011-sandbox-api-rate-limits.md).
ROUTE53 = Limits(
    answer=Answer("Throttling", 400, RATE_EXCEEDED),
    account=Row("All requests", Rate(5, 5), _every, ROUTE53_PAGE),
    per_account=True,
)

# -- RDS ---------------------------------------------------------------------------------------

RDS = Limits(
    answer=Answer("ThrottlingException", 400, RATE_EXCEEDED),
    account=Row("All requests", Rate(300, 12), _every, RDS_PAGE),
)

# -- Systems Manager: Parameter Store ---------------------------------------------------------

SSM = Limits(
    answer=Answer("ThrottlingException", 400, RATE_EXCEEDED),
    rows=(
        Row(
            "Parameter Store default throughput",
            Rate(40, 40),
            _named("GetParameter", "GetParameters", "GetParametersByPath"),
            SSM_PAGE,
        ),
    ),
)


def _per_second(name: str, rate: float, source: str, *operations: str) -> Row:
    """A quota page's "N transactions per second": a bucket of one second's calls."""
    return Row(name, Rate(rate, rate), _named(*(operations or (name,))), source)


# -- CloudWatch Logs ---------------------------------------------------------------------------

LOGS = Limits(
    answer=Answer("ThrottlingException", 400, RATE_EXCEEDED),
    rows=(
        _per_second("CreateLogStream", 50, LOGS_PAGE),
        _per_second("DescribeLogGroups", 5, LOGS_PAGE),
        _per_second("DescribeLogStreams", 5, LOGS_PAGE),
        _per_second("FilterLogEvents", 5, LOGS_PAGE),
        _per_second("GetLogEvents", 10, LOGS_PAGE),
        Row(
            "PutLogEvents",
            Rate(800, 800),
            _named("PutLogEvents"),
            LOGS_PAGE,
            in_regions={
                region: Rate(1500, 1500) for region in ("us-east-1", "us-west-2", "eu-west-1")
            },
        ),
    ),
)

# -- ECR ---------------------------------------------------------------------------------------

ECR = Limits(
    answer=Answer("ThrottlingException", 400, RATE_EXCEEDED),
    rows=(
        _per_second("BatchCheckLayerAvailability", 1000, ECR_PAGE),
        _per_second("BatchGetImage", 2000, ECR_PAGE),
        _per_second("CompleteLayerUpload", 100, ECR_PAGE),
        _per_second("GetAuthorizationToken", 500, ECR_PAGE),
        _per_second("GetDownloadUrlForLayer", 3000, ECR_PAGE),
        _per_second("InitiateLayerUpload", 100, ECR_PAGE),
        _per_second("PutImage", 10, ECR_PAGE),
        _per_second("UploadLayerPart", 500, ECR_PAGE),
    ),
)

# -- ACM ---------------------------------------------------------------------------------------

ACM = Limits(
    answer=Answer("ThrottlingException", 400, RATE_EXCEEDED),
    rows=(
        _per_second("AddTagsToCertificate", 5, ACM_PAGE),
        _per_second("DeleteCertificate", 10, ACM_PAGE),
        _per_second("DescribeCertificate", 10, ACM_PAGE),
        _per_second("ExportCertificate", 5, ACM_PAGE),
        _per_second("ImportCertificate", 1, ACM_PAGE),
        _per_second("ListCertificates", 5, ACM_PAGE),
        _per_second("ListTagsForCertificate", 10, ACM_PAGE),
        _per_second("RemoveTagsFromCertificate", 5, ACM_PAGE),
        _per_second("RequestCertificate", 5, ACM_PAGE),
        _per_second("ResendValidationEmail", 1, ACM_PAGE),
    ),
)

# -- Secrets Manager ---------------------------------------------------------------------------

SECRETS_MANAGER = Limits(
    answer=Answer("ThrottlingException", 400, RATE_EXCEEDED),
    rows=(
        _per_second("GetSecretValue", 10_000, SECRETS_PAGE),
        _per_second("DescribeSecret", 40_000, SECRETS_PAGE),
        _per_second("ListSecrets", 100, SECRETS_PAGE),
        _per_second("BatchGetSecretValue", 100, SECRETS_PAGE),
        _per_second(
            "Resource policy requests",
            50,
            SECRETS_PAGE,
            "DeleteResourcePolicy",
            "GetResourcePolicy",
            "PutResourcePolicy",
            "ValidateResourcePolicy",
        ),
        _per_second(
            "Secret value and replication updates",
            50,
            SECRETS_PAGE,
            "PutSecretValue",
            "RemoveRegionsFromReplication",
            "ReplicateSecretToRegion",
            "StopReplicationToReplica",
            "UpdateSecret",
            "UpdateSecretVersionStage",
        ),
        _per_second("RestoreSecret", 50, SECRETS_PAGE),
        _per_second("Rotation requests", 50, SECRETS_PAGE, "RotateSecret", "CancelRotateSecret"),
        _per_second("Tagging requests", 50, SECRETS_PAGE, "TagResource", "UntagResource"),
    ),
)

# -- CloudWatch --------------------------------------------------------------------------------

CLOUDWATCH = Limits(
    answer=Answer("Throttling", 400, RATE_EXCEEDED),
    rows=(
        _per_second("DescribeAlarms", 9, CLOUDWATCH_PAGE),
        _per_second("DescribeAlarmsForMetric", 9, CLOUDWATCH_PAGE),
        *(
            _per_second(name, 3, CLOUDWATCH_PAGE)
            for name in (
                "DeleteAlarms",
                "DescribeAlarmHistory",
                "DisableAlarmActions",
                "EnableAlarmActions",
                "SetAlarmState",
                "PutMetricAlarm",
            )
        ),
        *(
            _per_second(name, 10, CLOUDWATCH_PAGE)
            for name in (
                "DeleteDashboards",
                "GetDashboard",
                "ListDashboards",
                "PutDashboard",
                "PutAnomalyDetector",
                "DescribeAnomalyDetectors",
            )
        ),
        _per_second("DeleteAnomalyDetector", 5, CLOUDWATCH_PAGE),
        _per_second("GetMetricData", 50, CLOUDWATCH_PAGE),
        _per_second("GetMetricStatistics", 400, CLOUDWATCH_PAGE),
        _per_second("GetMetricWidgetImage", 20, CLOUDWATCH_PAGE),
        _per_second("ListMetrics", 25, CLOUDWATCH_PAGE),
        _per_second("PutMetricData", 500, CLOUDWATCH_PAGE),
    ),
)

# -- EventBridge Scheduler ---------------------------------------------------------------------

SCHEDULER_PAGE = "https://docs.aws.amazon.com/scheduler/latest/UserGuide/scheduler-quotas.html"
# Each operation's "request rate" in requests per second, the primary Regions' defaults (the
# rest of the page's operations are not throttled here).
SCHEDULER = Limits(
    answer=Answer("ThrottlingException", 429, RATE_EXCEEDED),
    rows=(
        _per_second("CreateSchedule", 5000, SCHEDULER_PAGE),
        _per_second("DeleteSchedule", 1000, SCHEDULER_PAGE),
        _per_second("CreateScheduleGroup", 10, SCHEDULER_PAGE),
        _per_second("DeleteScheduleGroup", 10, SCHEDULER_PAGE),
    ),
)

# botocore's service name -> the service's documented rates.
LIMITS: dict[str, Limits] = {
    "ec2": EC2,
    "ecs": ECS,
    "elbv2": ELBV2,
    "route53": ROUTE53,
    "rds": RDS,
    "ssm": SSM,
    "logs": LOGS,
    "ecr": ECR,
    "acm": ACM,
    "secretsmanager": SECRETS_MANAGER,
    "cloudwatch": CLOUDWATCH,
    "scheduler": SCHEDULER,
}

# How a service with no documented rate answers a throttle a test asks for (`throttle`): its
# own code where its API documents one, else its protocol's usual one.
_FORCED_ANSWERS: dict[str, Answer] = {
    # Bedrock's API reference: ThrottlingException, HTTP 429.
    "bedrock": Answer("ThrottlingException", 429, "Too many requests, please wait."),
    "organizations": Answer("TooManyRequestsException", 400, RATE_EXCEEDED),
    "resourcegroupstaggingapi": Answer("ThrottledException", 400, RATE_EXCEEDED),
    "s3": Answer("SlowDown", 503, "Please reduce your request rate."),
}
_PROTOCOL_ANSWERS = {
    "ec2": EC2.answer,
    "json": Answer("ThrottlingException", 400, RATE_EXCEEDED),
    "rest-json": Answer("ThrottlingException", 429, RATE_EXCEEDED),
    "query": Answer("Throttling", 400, RATE_EXCEEDED),
    "rest-xml": Answer("Throttling", 400, RATE_EXCEEDED),
}


def answer_for(call: Call) -> Answer:
    """How `call`'s service refuses it when it is throttled."""
    limits = LIMITS.get(call.service)
    if limits is not None:
        return limits.answer
    return _FORCED_ANSWERS.get(call.service) or _PROTOCOL_ANSWERS[call.protocol]
