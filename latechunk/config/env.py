"""Settings of a run read from the environment (the ranks of ``torchrun`` / ``accelerate launch``)."""

from __future__ import annotations

import os
from collections.abc import Mapping


def dist_env(environ: Mapping[str, str] | None = None) -> tuple[int, int, int]:
    """``(rank, world_size, local_rank)`` from ``$RANK``, ``$WORLD_SIZE`` and ``$LOCAL_RANK`` (set for each
    process by ``torchrun`` and ``accelerate launch``); ``(0, 1, 0)`` when unset. ``LOCAL_RANK`` defaults to
    ``RANK``. A setting of the run read from the environment (here, not in :mod:`latechunk.ingest.ranks`, so
    the command line reads it before torch is imported).

    Args:
        environ: The environment to read (default ``os.environ``).

    Returns:
        ``(rank, world_size, local_rank)``.

    Raises:
        ValueError: on a value that is not an integer or out of range.
    """
    env = os.environ if environ is None else environ

    def get(name: str, default: int) -> int:
        v = str(env.get(name, "")).strip()
        if not v:
            return default
        try:
            return int(v)
        except ValueError:
            raise ValueError(f"${name} must be an integer, got {v!r}") from None

    world = get("WORLD_SIZE", 1)
    rank = get("RANK", 0)
    local = get("LOCAL_RANK", rank)
    if world < 1:
        raise ValueError(f"$WORLD_SIZE must be >= 1, got {world}")
    if not 0 <= rank < world:
        raise ValueError(f"$RANK={rank} is outside 0..{world - 1} ($WORLD_SIZE={world})")
    if local < 0:
        raise ValueError(f"$LOCAL_RANK must be >= 0, got {local}")
    return rank, world, local
