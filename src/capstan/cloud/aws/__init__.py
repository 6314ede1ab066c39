"""The AWS driver: plain boto3, one module per AWS service, typed errors out.

The same code talks to AWS and to the sandbox cloud; only the endpoint and the base credentials
differ (see `capstan.cloud.aws.session.Endpoint`).
"""
