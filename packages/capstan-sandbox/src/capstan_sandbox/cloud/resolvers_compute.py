"""Resolvers for ECS, ECR, CloudWatch Logs, SSM, Secrets Manager, S3 and CodeBuild (see
`resolving`)."""

from __future__ import annotations

from capstan_sandbox.cloud.resolving import (
    UNKNOWN,
    Scope,
    Target,
    last,
    numbered,
    resolves,
)


def _ecs_cluster(scope: Scope) -> str:
    cluster = scope.call.get("cluster") or "default"
    return cluster if cluster.startswith("arn:") else scope.arn("ecs", f"cluster/{cluster}")


@resolves("ecs:CreateCluster")
def _ecs_create_cluster(scope: Scope) -> list[Target]:
    name = scope.call.get("clusterName") or "default"
    return [Target(scope.arn("ecs", f"cluster/{name}"), "cluster", existing=False)]


@resolves("ecs:DeleteCluster", "ecs:DescribeClusters")
def _ecs_clusters(scope: Scope) -> list[Target]:
    named = numbered(scope.call, "clusters") or [scope.call.get("cluster") or "default"]
    return [
        Target(c if c.startswith("arn:") else scope.arn("ecs", f"cluster/{c}"), "cluster")
        for c in named
    ]


def _ecs_service_arn(scope: Scope, service: str) -> str:
    if service.startswith("arn:"):
        return service
    return scope.arn("ecs", f"service/{last(_ecs_cluster(scope))}/{service}")


@resolves("ecs:CreateService")
def _ecs_create_service(scope: Scope) -> list[Target]:
    arn = _ecs_service_arn(scope, scope.call.get("serviceName") or "")
    return [Target(arn, "service", {"ecs:cluster": [_ecs_cluster(scope)]}, existing=False)]


@resolves("ecs:UpdateService", "ecs:DeleteService", "ecs:DescribeServices")
def _ecs_services(scope: Scope) -> list[Target]:
    named = numbered(scope.call, "services") or [scope.call.get("service") or ""]
    context = {"ecs:cluster": [_ecs_cluster(scope)]}
    return [Target(_ecs_service_arn(scope, s), "service", context) for s in named]


@resolves("ecs:ListServices")
def _ecs_list_services(scope: Scope) -> list[Target]:
    return [Target("*", None, {"ecs:cluster": [_ecs_cluster(scope)]})]


@resolves("ecs:ListTasks")
def _ecs_list_tasks(scope: Scope) -> list[Target]:
    """On the container instance it names; with none (Fargate), only "*" covers the call."""
    context = {"ecs:cluster": [_ecs_cluster(scope)]}
    instance = scope.call.get("containerInstance")
    if instance and not instance.startswith("arn:"):
        instance = scope.arn("ecs", f"container-instance/{last(_ecs_cluster(scope))}/{instance}")
    return [Target(instance or "*", "container-instance", context)]


@resolves("ecs:RunTask")
def _ecs_run_task(scope: Scope) -> list[Target]:
    """On the task definition it runs (a family alone: its latest revision), in its cluster
    (https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonelasticcontainerservice.html)."""
    named = scope.call.get("taskDefinition") or UNKNOWN
    if not named.startswith("arn:"):
        named = scope.arn("ecs", f"task-definition/{named}")
    context = {"ecs:cluster": [_ecs_cluster(scope)]}
    for key, parameter in (
        ("ecs:task-cpu", "overrides.cpu"),
        ("ecs:task-memory", "overrides.memory"),
    ):
        value = scope.call.get(parameter)
        if value:
            context[key] = [value]
    return [Target(named, "task-definition", context)]


@resolves("ecs:DescribeTasks", "ecs:StopTask")
def _ecs_tasks(scope: Scope) -> list[Target]:
    context = {"ecs:cluster": [_ecs_cluster(scope)]}
    named = numbered(scope.call, "tasks") or [scope.call.get("task") or ""]
    return [
        Target(
            t
            if t.startswith("arn:")
            else scope.arn("ecs", f"task/{last(_ecs_cluster(scope))}/{t}"),
            "task",
            context,
        )
        for t in named
    ]


@resolves("ecs:RegisterTaskDefinition")
def _ecs_register(scope: Scope) -> list[Target]:
    family = scope.call.get("family") or ""
    return [
        Target(scope.arn("ecs", f"task-definition/{family}:*"), "task-definition", existing=False)
    ]


@resolves("ecs:DeleteTaskDefinitions")
def _ecs_delete_definitions(scope: Scope) -> list[Target]:
    return [
        Target(
            d if d.startswith("arn:") else scope.arn("ecs", f"task-definition/{d}"),
            "task-definition",
        )
        for d in numbered(scope.call, "taskDefinitions")
    ]


@resolves("ecs:TagResource", "ecs:UntagResource", "ecs:ListTagsForResource")
def _ecs_tagged(scope: Scope) -> list[Target]:
    arn = scope.call.get("resourceArn") or UNKNOWN
    kind = arn.split(":", 5)[-1].split("/", 1)[0] if arn.startswith("arn:") else None
    return [Target(arn, kind)]


@resolves(
    "ecr:CreateRepository",
    "ecr:DeleteRepository",
    "ecr:DescribeImages",
    "ecr:BatchDeleteImage",
    "ecr:ListImages",
    "ecr:PutLifecyclePolicy",
    "ecr:BatchGetImage",
    "ecr:PutImage",
)
def _ecr_repository(scope: Scope) -> list[Target]:
    name = scope.call.get("repositoryName") or ""
    existing = scope.call.operation != "CreateRepository"
    return [Target(scope.arn("ecr", f"repository/{name}"), "repository", existing=existing)]


@resolves("ecr:DescribeRepositories")
def _ecr_repositories(scope: Scope) -> list[Target]:
    names = numbered(scope.call, "repositoryNames") or ["*"]
    return [Target(scope.arn("ecr", f"repository/{n}"), "repository") for n in names]


@resolves("ecr:ListTagsForResource", "ecr:TagResource", "ecr:UntagResource")
def _ecr_tagged(scope: Scope) -> list[Target]:
    return [Target(scope.call.get("resourceArn") or UNKNOWN, "repository")]


def _log_group(scope: Scope, name: str) -> str:
    return scope.arn("logs", f"log-group:{name}")


@resolves(
    "logs:CreateLogGroup",
    "logs:DeleteLogGroup",
    "logs:PutRetentionPolicy",
    "logs:ListTagsLogGroup",
    "logs:FilterLogEvents",
    "logs:DescribeLogStreams",
)
def _logs_group(scope: Scope) -> list[Target]:
    name = scope.call.get("logGroupName") or last(scope.call.get("logGroupIdentifier") or "")
    existing = scope.call.operation != "CreateLogGroup"
    return [Target(_log_group(scope, name), "log-group", existing=existing)]


@resolves("logs:GetLogEvents")
def _logs_stream(scope: Scope) -> list[Target]:
    group = scope.call.get("logGroupName") or ""
    stream = scope.call.get("logStreamName") or ""
    return [Target(scope.arn("logs", f"log-group:{group}:log-stream:{stream}"), "log-stream")]


@resolves("logs:TagResource", "logs:UntagResource", "logs:ListTagsForResource")
def _logs_tagged(scope: Scope) -> list[Target]:
    return [Target((scope.call.get("resourceArn") or UNKNOWN).removesuffix(":*"), "log-group")]


def _parameter(scope: Scope, name: str) -> str:
    return scope.arn("ssm", f"parameter/{name.lstrip('/')}")


@resolves("ssm:PutParameter", "ssm:DeleteParameter", "ssm:GetParameter")
def _ssm_parameter(scope: Scope) -> list[Target]:
    existing = scope.call.operation != "PutParameter"
    return [Target(_parameter(scope, scope.call.get("Name") or ""), "parameter", existing=existing)]


@resolves("ssm:DeleteParameters", "ssm:GetParameters")
def _ssm_parameters(scope: Scope) -> list[Target]:
    return [Target(_parameter(scope, n), "parameter") for n in numbered(scope.call, "Names")]


@resolves("ssm:GetParametersByPath")
def _ssm_path(scope: Scope) -> list[Target]:
    path = (scope.call.get("Path") or "/").rstrip("/")
    return [Target(_parameter(scope, path), "parameter")]


@resolves("ssm:AddTagsToResource", "ssm:RemoveTagsFromResource", "ssm:ListTagsForResource")
def _ssm_tagged(scope: Scope) -> list[Target]:
    if scope.call.get("ResourceType") != "Parameter":
        return [Target(UNKNOWN)]
    return [Target(_parameter(scope, scope.call.get("ResourceId") or ""), "parameter")]


@resolves(
    "secretsmanager:DescribeSecret",
    "secretsmanager:GetSecretValue",
    "secretsmanager:ListSecretVersionIds",
    "secretsmanager:RotateSecret",
)
def _secret(scope: Scope) -> list[Target]:
    """One secret, named by ARN or by name: IAM checks the secret's full ARN (its name and the
    six characters Secrets Manager adds), which a name alone is looked up for."""
    from moto.secretsmanager.models import secretsmanager_backends

    named = scope.call.get("SecretId") or ""
    if named.startswith("arn:"):
        return [Target(named, "Secret")]
    found = secretsmanager_backends[scope.account][scope.region].secrets.get(named)
    return [Target(found.arn if found is not None else UNKNOWN, "Secret")]


def _bucket(scope: Scope) -> str:
    return f"arn:{scope.partition}:s3:::{scope.call.get('Bucket') or ''}"


@resolves(
    "s3:CreateBucket",
    "s3:DeleteBucket",
    "s3:ListBucket",
    "s3:ListBucketVersions",
    "s3:PutBucketPolicy",
    "s3:GetBucketPolicy",
    "s3:DeleteBucketPolicy",
    "s3:PutBucketPublicAccessBlock",
    "s3:GetBucketPublicAccessBlock",
    "s3:PutBucketTagging",
    "s3:GetBucketTagging",
    "s3:PutEncryptionConfiguration",
    "s3:GetEncryptionConfiguration",
    "s3:PutBucketCORS",
    "s3:PutLifecycleConfiguration",
    "s3:PutBucketOwnershipControls",
    "s3:PutBucketVersioning",
    "s3:GetBucketLocation",
    "s3:GetMetricsConfiguration",
    "s3:PutMetricsConfiguration",
)
def _s3_bucket(scope: Scope) -> list[Target]:
    return [Target(_bucket(scope), "bucket", existing=scope.call.operation != "CreateBucket")]


@resolves("s3:GetObject", "s3:PutObject", "s3:DeleteObject")
def _s3_objects(scope: Scope) -> list[Target]:
    keys = scope.call.all(r"Delete\.Object(?:\.\d+)?\.Key") or [scope.call.get("Key") or ""]
    return [Target(f"{_bucket(scope)}/{key}", "object") for key in keys]


def _project(scope: Scope, name: str) -> str:
    return scope.arn("codebuild", f"project/{name}")


@resolves("codebuild:CreateProject", "codebuild:UpdateProject", "codebuild:DeleteProject")
def _codebuild_project(scope: Scope) -> list[Target]:
    name = last(scope.call.get("name") or "")
    existing = scope.call.operation != "CreateProject"
    return [Target(_project(scope, name), "project", existing=existing)]


@resolves("codebuild:StartBuild")
def _codebuild_start(scope: Scope) -> list[Target]:
    return [Target(_project(scope, last(scope.call.get("projectName") or "")), "project")]


@resolves("codebuild:BatchGetProjects")
def _codebuild_projects(scope: Scope) -> list[Target]:
    return [Target(_project(scope, last(n)), "project") for n in numbered(scope.call, "names")]


@resolves("codebuild:BatchGetBuilds", "codebuild:StopBuild")
def _codebuild_builds(scope: Scope) -> list[Target]:
    ids = numbered(scope.call, "ids") or [scope.call.get("id") or ""]
    return [Target(_project(scope, last(i).split(":", 1)[0]), "project") for i in ids]
