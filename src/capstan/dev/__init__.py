"""The dev server's glue, beside the composition root (`cli.py`, `app.py`, `dev_server.py`):
what `capstan server --dev` adds around the sandbox (`capstan_sandbox`, the AWS and GitHub
emulators, which know nothing of Capstan).

- `sandbox_cloud`: the sandbox cloud started with what it needs of Capstan (its resource tag,
  its site builds' variables, its prices).
- `identity`, `operator`, `accounts`: the control plane's identity in the sandbox — the
  operator's IAM user and key, the service domain's zone, the organization's accounts.
- `console` + `setup_page`: the customer's side — launching Capstan's role stack in "their"
  account, behind `/sandbox/cloud/setup`.
- `front` + `front_balancer`: what answers at a service's hostname, followed through the
  sandbox's DNS, load balancers and CloudFront.
- `git_host`: the GitHub emulator made from Capstan's settings and mounted under
  `/sandbox/git_host/`.
"""
