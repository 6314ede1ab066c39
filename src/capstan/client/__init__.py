"""The user's side of the `capstan` command: a client of the public API (login, projects,
services, deploy, logs, environment, rollback). It never imports the server's packages: it talks
HTTP like any other client, so it works against any Capstan server it can reach."""
