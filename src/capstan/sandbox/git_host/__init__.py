"""The sandbox git host: a small GitHub emulator served under `/sandbox/git_host/` in sandbox mode.

It plays GitHub for the app client — the app's install page, the REST endpoints the client uses
(app JWT and installation-token auth, as GitHub checks them), and sample repositories with
branches — so the whole install flow runs with no GitHub account. It is public, as GitHub is.
"""
