"""The git host: the GitHub App client, webhook signatures, and the installations API."""
