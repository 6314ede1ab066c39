"""The sandbox cloud: moto, in this process, plus what moto lacks — in AWS's terms.

- `server`: the moto server on a loopback port (`start_sandbox_cloud()`).
- `sts` + `trust`: AssumeRole enforces trust policies (role must exist; principal, external ID).
- `iam_propagation`: IAM's changes to a role take effect after a delay (a new role cannot be
  assumed yet, a grant waits, a removal applies at once).
- `accounts`: the sandbox organization; accounts made through Organizations.
- `operator`: the control plane's IAM user and access key in the operator account.
- `console` + `pages`: the customer's side — launching Capstan's role stack in "their" account,
  behind `/sandbox/cloud/setup` (served only in sandbox mode).
- `route53`, `acm`, `cloudfront`, `elasticache`, `bedrock`, `bedrock_profiles`, `s3_metrics`,
  `limits`, `log_pages`, `ecr_lifecycle`, `rds`: APIs and behaviour moto lacks or gets wrong (each
  module says what it adds).
- `throttling`: AWS's API rate limits, per account and API, answered with each service's own
  throttling error (on by default; `CAPSTAN_SANDBOX_THROTTLING` or `configure` changes them).
- `moto_work`: work moto does for each answer or new account that no answer reads (stock machine
  images, YAML-parsing JSON templates, listing its package and a class's functions per call),
  left undone.
- `moto_threads`: moto's reads that walk a live dictionary (IAM's roles) walk a copy, so a call
  answered beside another that changes it is not a bare 500.

Capstan's driver cannot tell the sandbox from AWS: it only gets a different endpoint URL and
different base credentials.
"""
