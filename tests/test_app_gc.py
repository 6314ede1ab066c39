"""The app's lifespan freezes the objects that exist once it has started out of the garbage
collector's passes while it serves (see `capstan.app._startup_objects_frozen`)."""

from __future__ import annotations

import gc

from capstan.app import _startup_objects_frozen
from tests.harness import RunningServer


def test_a_serving_app_has_its_startup_objects_frozen(server: RunningServer) -> None:
    assert server.app.state.settings is not None
    assert gc.get_freeze_count() > 0


def test_the_last_app_to_stop_unfreezes() -> None:
    with _startup_objects_frozen():
        with _startup_objects_frozen():
            pass
        assert gc.get_freeze_count() > 0  # the outer one still serves
    # Only when no app is serving: the session's test server may be.
    import capstan.app

    if capstan.app._serving == 0:
        assert gc.get_freeze_count() == 0
