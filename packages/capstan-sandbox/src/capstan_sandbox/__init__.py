"""capstan-sandbox: an AWS emulator (`cloud`: moto, IAM as AWS evaluates it, quotas, API rate
limits, and a simulator of what AWS does on its own) and a GitHub emulator (`git_host`). It
imports nothing from Capstan; what it needs of the product it serves comes in when it starts
(`cloud.product`). SCOPE.md says what it emulates and what it does not."""
