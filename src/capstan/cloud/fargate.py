"""Fargate task sizes: which memory (MiB) goes with which cpu (units), as AWS documents them."""

from __future__ import annotations

CPU_VALUES = (256, 512, 1024, 2048, 4096)

FARGATE_MEMORY: dict[int, tuple[int, ...]] = {
    256: (512, 1024, 2048),
    512: tuple(range(1024, 4096 + 1, 1024)),
    1024: tuple(range(2048, 8192 + 1, 1024)),
    2048: tuple(range(4096, 16384 + 1, 1024)),
    4096: tuple(range(8192, 30720 + 1, 1024)),
}


def memory_problem(cpu: int, memory: int) -> str | None:
    """Why `memory` cannot go with `cpu`, naming the valid values; None when it can."""
    valid = FARGATE_MEMORY.get(cpu)
    if valid is None:
        return f"cpu must be one of {', '.join(map(str, CPU_VALUES))}."
    if memory not in valid:
        listed = ", ".join(map(str, valid))
        return f"memory {memory} does not go with cpu {cpu}; valid memory values: {listed}."
    return None
