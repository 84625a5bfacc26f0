"""The driver shared by the differential tests: run a scenario through one client kind on its own DB."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import redis

from _adapters import LoopThread, new_client

#: The scenario: (client, raw redis-py) -> (ids in creation order, a log of results).
Scenario = Callable[[Any, redis.Redis], tuple[list[str], list[Any]]]


def containers(value: Any, index: dict[str, str], normalize: Callable[[Any, dict[str, str]], Any]) -> Any:
    """The part of every test's ``normalize`` that is not about its own types: lists and tuples become lists
    of normalised items, dicts have their keys and values normalised; anything else is returned as it is."""
    if isinstance(value, (list, tuple)):
        return [normalize(v, index) for v in value]
    if isinstance(value, dict):
        return {normalize(k, index): normalize(v, index) for k, v in value.items()}
    return value


def run_scenario(
    kind: str,
    url: str,
    loop: LoopThread,
    scenario: Scenario,
    dump: Callable[[redis.Redis, dict[str, str]], dict[str, Any]],
    normalize: Callable[[Any, dict[str, str]], Any],
) -> tuple[dict[str, Any], Any]:
    """(the DB's normalised state, the normalised log), ids replaced by ``<index>``; chunk_size=3."""
    raw = redis.Redis.from_url(url, decode_responses=True)
    c = new_client(kind, loop, url, chunk_size=3)
    try:
        ids, log = scenario(c, raw)
        index = {msg_id: f'<{i}>' for i, msg_id in enumerate(ids)}
        assert len(index) == len(ids)
        return dump(raw, index), normalize(log, index)
    finally:
        c.close()
        raw.close()
