"""The sandbox's public DNS: the internet's DNS as the sandbox's customers see it.

No sandbox account owns it. It stands for the DNS providers where customers keep their own
domains: people and tests write its records through HTTP (`control`, mounted by the dev server
at `/sandbox/dns/records`), and it answers real DNS queries over UDP (`server`), resolving CNAME
chains across its own records, the public hosted zones of the sandbox's Route 53 and the names
AWS itself answers for load balancers and CloudFront distributions (`resolver`). ACM's DNS
validation reads it too (`capstan_sandbox.cloud.acm`). Its records are kept with the rest of the
sandbox's state (`capstan_sandbox.cloud.persistence`).
"""
