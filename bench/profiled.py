"""`capstan ...` with a yappi CPU profile that `bench/deploy.py --profile` starts and stops.

Run as `python bench/profiled.py ARGS` instead of `python -m capstan ARGS`. With
`BENCH_PROFILE_OUT` set, SIGUSR1 clears and starts a profile of every thread (CPU clock) and
SIGUSR2 stops it and writes its functions, heaviest first by total and by own time, to that file
(and the whole profile beside it, `.pstat`, for `python -m pstats`).
Without the variable it is plain `capstan`. yappi is not a dependency: `pip install yappi`.
"""

from __future__ import annotations

import io
import os
import signal
import sys
from types import FrameType

OUT = os.environ.get("BENCH_PROFILE_OUT")
LINES = 50


def _start(_signal: int, _frame: FrameType | None) -> None:
    import yappi

    yappi.set_clock_type("cpu")
    yappi.clear_stats()
    yappi.start(builtins=False, profile_threads=True)


def _stop(_signal: int, _frame: FrameType | None) -> None:
    import yappi

    yappi.stop()
    assert OUT is not None
    stats = yappi.get_func_stats()
    text = io.StringIO()
    for order in ("ttot", "tsub"):
        text.write(f"== by {order} (CPU seconds) ==\n")
        stats.sort(order, "desc")
        for index, item in enumerate(stats):
            if index >= LINES:
                break
            where = f"{os.path.relpath(item.module)}:{item.lineno}" if item.module else ""
            text.write(f"{item.ttot:8.3f} {item.tsub:8.3f} {item.ncall:>8} {item.name} {where}\n")
    with open(OUT + ".tmp", "w") as file:
        file.write(text.getvalue())
    stats.save(OUT + ".pstat", type="pstat")  # the whole profile, for `python -m pstats`
    os.replace(OUT + ".tmp", OUT)


if __name__ == "__main__":
    if OUT:
        signal.signal(signal.SIGUSR1, _start)
        signal.signal(signal.SIGUSR2, _stop)
    from capstan.cli import main

    sys.argv[0] = "capstan"
    main()
