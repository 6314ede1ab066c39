"""The project certificate: HTTPS for every web server of a project.

One ACM certificate per project covers `*.<hostname_suffix>.<domain>`, validated by DNS records
Capstan writes into the operator's zone, and served by an HTTPS listener on the project's load
balancer. `service` holds the API's rules, `reconcile` the cloud work (queue kind
`certificate`, keyed by project), `driver` the coarse cloud steps.
"""
