"""``ferroq top``: a live view of every rfq topic, RSMQ queue and stream (consumer groups included).

On a terminal it is a Textual app refreshing in place; keys: ``s`` sort by the next column (or click a
header), ``r`` reverse the order, ``/`` filter by name (Enter keeps it, Escape clears it), ``q`` or Ctrl-C
quit. Not on a terminal (or with ``--once``) it prints one table and exits. The figures come from
:mod:`ferroq._figures`.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict
from typing import Any

from ferroq._figures import GroupFigures, QueueFigures, Sampler, Snapshot
from ferroq.exceptions import InvalidArgument

__all__ = ['COLUMNS', 'rows', 'run']

#: Column titles, in order; the first two are text, the rest numbers.
COLUMNS = (
    'KIND', 'NAME', 'DEPTH', 'IN_FLIGHT', 'EXPIRED', 'DELAYED', 'DEAD', 'PUB/S', 'COMMIT/S', 'OLDEST', 'LAG',
    'CONSUMERS',
)  # fmt: skip
_NAME = 1


def _count(value: int | None) -> str:
    return '-' if value is None else str(value)


def _per_second(value: float | None, exact: bool) -> str:
    """A rate; ``>=`` marks a lower bound."""
    if value is None:
        return '-'
    text = f'{value:.0f}' if value >= 100 else f'{value:.1f}'
    return text if exact else f'>={text}'


def _age(seconds: float | None) -> str:
    if seconds is None:
        return '-'
    for unit, size in (('d', 86400), ('h', 3600), ('m', 60)):
        if seconds >= size:
            return f'{seconds / size:.1f}{unit}'
    return f'{seconds:.1f}s'


def _sort_value(row: tuple[Any, ...], column: int) -> tuple[int, Any]:
    value = row[column]
    if column <= _NAME:
        return (0, value)
    return (0, value) if value is not None else (1, 0)  # unknown figures last


def rows(snapshot: Snapshot, *, match: str = '', sort: int = _NAME, reverse: bool = False) -> list[list[str]]:
    """The table's rows (cells as text): queues matching ``match`` sorted by column ``sort``, each stream's
    groups under it (a group row matches by its own name too)."""
    needle = match.lower()
    shown: list[tuple[tuple[Any, ...], list[tuple[Any, ...]]]] = []
    for q in snapshot.queues:
        groups = [_group_values(q, g) for g in q.groups]
        if needle and needle not in q.name.lower():
            groups = [g for g in groups if needle in str(g[_NAME]).lower()]
            if not groups:
                continue
        shown.append((_values(q), groups))
    shown.sort(key=lambda item: _sort_value(item[0], sort), reverse=reverse)
    out = []
    for queue, groups in shown:
        out.append(_cells(queue))
        out.extend(_cells(g) for g in groups)
    return out


def _group_values(q: QueueFigures, g: GroupFigures) -> tuple[Any, ...]:
    return ('group', f'{q.name} > {g.name}', None, g.pending, None, None, None, None, g.commit_rate, None, g.lag,
            g.consumers, True)  # fmt: skip


def _values(q: QueueFigures) -> tuple[Any, ...]:
    consumers = sum(g.consumers for g in q.groups) if q.groups else None
    return (q.kind, q.name, q.depth, q.in_flight, q.expired, q.delayed, q.dead_letters, q.publish_rate,
            q.commit_rate, q.oldest_age, q.lag, consumers, q.rates_exact)  # fmt: skip


def _cells(values: tuple[Any, ...]) -> list[str]:
    kind, name, depth, in_flight, expired, delayed, dead, pub, commit, age, lag, consumers, exact = values
    return [
        kind,
        name,
        _count(depth),
        _count(in_flight),
        _count(expired),
        _count(delayed),
        _count(dead),
        _per_second(pub, exact),
        _per_second(commit, exact),
        _age(age),
        _count(lag),
        _count(consumers),
    ]


def _print_table(table: list[list[str]]) -> None:
    table = [list(COLUMNS), *table]
    widths = [max(len(row[i]) for row in table) for i in range(len(COLUMNS))]
    for row in table:
        cells = [c.ljust(w) if i <= _NAME else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))]
        print('  '.join(cells).rstrip())


def _snapshot_json(snapshot: Snapshot) -> list[dict[str, Any]]:
    out = []
    for q in snapshot.queues:
        record = {k: v for k, v in asdict(q).items() if not k.startswith('_')}
        out.append(record)
    return out


def run(url: str | None, *, interval: float, match: str, once: bool, as_json: bool) -> int:
    """``ferroq top``: the live view on a terminal, else one table (two reads ``interval`` apart, for the rates)."""
    if not 0 < interval <= 3600:
        raise InvalidArgument(f'--interval must be more than 0 and at most 3600 seconds, got {interval:g}')
    with Sampler(url) as sampler:
        if once or as_json or not (sys.stdout.isatty() and sys.stdin.isatty()):
            sampler.read()
            time.sleep(interval)  # a second read gives the rates
            snapshot = sampler.read()
            if as_json:
                print(json.dumps(_snapshot_json(snapshot)))
            else:
                _print_table(rows(snapshot, match=match))
            return 0
        _live(sampler, interval, match)
    return 0


def _live(sampler: Sampler, interval: float, match: str) -> None:
    from ferroq._top_app import TopApp  # Textual loads only for the live view

    TopApp(sampler, interval, match).run()
