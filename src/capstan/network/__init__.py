"""The project network: the VPC, subnets, security groups, load balancer, ECS cluster and IAM
roles a project's web servers, workers and caches run in, reconciled as a resource of its own
(queue kind `project_network`, keyed by project id). `service` holds what other kinds ask of it
(`require_cloud_account`, `enqueue`), `reconcile` its reconciler, `kind` its descriptor."""
