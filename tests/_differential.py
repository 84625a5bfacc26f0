"""The driver shared by the differential tests: run a scenario through one client kind on its own DB."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis

from _adapters import KINDS, LoopThread, new_client

#: The client kind the others are compared with (the reference implementation), and those others.
REFERENCE = 'pure'
COMPARED = [kind for kind in KINDS if kind != REFERENCE]

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


@dataclass(frozen=True)
class Differential:
    """A differential test: its scenario, and how it reads (``dump``) and normalises (``normalize``) what it leaves."""

    scenario: Scenario
    dump: Callable[[redis.Redis, dict[str, str]], dict[str, Any]]
    normalize: Callable[[Any, dict[str, str]], Any]

    def run(self, kind: str, redis_url: str, db: int, loop: LoopThread) -> tuple[dict[str, Any], Any]:
        """:func:`run_scenario` by ``kind`` on database ``db`` of the test server."""
        url = f'{redis_url.rsplit("/", 1)[0]}/{db}'
        return run_scenario(kind, url, loop, self.scenario, self.dump, self.normalize)

    def run_both(
        self, kind: str, redis_url: str, loop: LoopThread, dbs: tuple[int, int]
    ) -> tuple[tuple[dict[str, Any], Any], tuple[dict[str, Any], Any]]:
        """The runs of :data:`REFERENCE` and of ``kind``, on the two databases ``dbs``."""
        return self.run(REFERENCE, redis_url, dbs[0], loop), self.run(kind, redis_url, dbs[1], loop)
