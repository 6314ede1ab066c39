"""Custom domains: a web server served at the customer's own hostname, over HTTPS.

Each domain holds a claim on its hostname (`capstan.hostnames`: one table for every public
hostname Capstan serves), an ACM certificate validated by a record the customer creates, and,
once the certificate is issued, its place on the project's load balancer (a listener
certificate and a host rule). `service` holds the API's rules, `reconcile` the
cloud work (queue kind `domain`, keyed by domain), `checks` the DNS look-ups.
"""
