"""The sandbox git host: a small GitHub emulator served under `/sandbox/git_host/` in sandbox mode.

It plays GitHub for the app client — the app's install page, the REST endpoints the client uses
(app JWT and installation-token auth, as GitHub checks them), and sample repositories with
branches — so the whole install flow runs with no GitHub account. Control endpoints push commits,
delete branches, close pull requests and make repositories, and the app's webhooks are delivered
to Capstan signed as GitHub signs them (`webhooks`). It is public, as GitHub is.
"""
