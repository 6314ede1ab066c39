"""What the simulator's parts (builds, ECS, caches...) use of the simulator that runs them: a
shape they name, so that they need not import the simulator, which imports them."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from capstan_sandbox.cloud.knobs import Knobs
from capstan_sandbox.cloud.simulator.cost import Ledger


class Simulator(Protocol):
    @property
    def knobs(self) -> Knobs: ...

    @property
    def cost(self) -> Ledger: ...

    @property
    def pool(self) -> ThreadPoolExecutor: ...

    def is_failing(self, service_name: str, resource: str | None) -> bool: ...
