"""The targets' ratios, measured in pairs: native and its comparator timed back to back, in alternating order.

On a shared machine the speed of the server drifts by tens of percent within minutes (other tenants, an
AOF rewrite, the allocator): the matrix measures a native cell and its comparator (a ceiling, the best
pure-Python client, a peer library) minutes apart, and their ratio carries that drift. Here each target's
two sides are measured one right after the other, ``pairs`` times, the order alternating (AB, BA, AB, ...),
and the target's ratio is the median of the per-pair ratios. Targets against a reference figure (a peer
that cannot run here) have nothing to pair.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from ferroq.bench._ceiling import measure_one_ceiling, one_ceiling_steps
from ferroq.bench._common import Admin, Config, Progress
from ferroq.bench._render import TARGETS, Target, best_native, best_pure, ceiling_key

__all__ = ['measure_pairs', 'pair_plans', 'pair_steps']

#: measures one matrix cell again: (operation, batch, implementation, tag) -> msgs/s, or None if it failed
CellMeter = Callable[[str, int, str, str], 'float | None']


def pair_plans(data: dict[str, Any]) -> list[tuple[Target, str, tuple[str, ...]]]:
    """For each target that can be paired: the target, its native implementation and its comparator.

    The comparator is ``('ceiling', key)`` or ``('cell', impl, op, batch)``; the native side is the
    implementation whose row was best in the matrix. ``data`` needs its ratios (``ceiling_key``) added.
    """
    plans: list[tuple[Target, str, tuple[str, ...]]] = []
    rows = data['rows']
    for t in TARGETS:
        row = best_native(rows, t.op, t.batch, t.impl)
        if row is None or t.against.startswith('ref:'):
            continue
        if t.against.startswith('ceiling'):
            key = ceiling_key(t, row)
            if key and ((data.get('ceilings') or {}).get(key) or {}).get('msgs_per_s'):
                plans.append((t, row['impl'], ('ceiling', key)))
        elif t.against == 'best-pure':
            pure = best_pure(rows, t.op, row['batch'])
            if pure is not None:
                plans.append((t, row['impl'], ('cell', pure['impl'], t.op, str(row['batch']))))
        else:
            impl, op, batch = t.against.rsplit(':', 2)
            if any(r['impl'] == impl and r['operation'] == op and r['batch'] == int(batch) for r in rows):
                plans.append((t, row['impl'], ('cell', impl, op, batch)))
    return plans


def measure_pairs(
    cfg: Config, admin: Admin, data: dict[str, Any], measure_cell: CellMeter, progress: Progress
) -> dict[str, Any]:
    """``{target label: {native_impl, native, against, ratios, ratio}}`` from ``cfg.target_pairs`` pairs each."""
    out: dict[str, Any] = {}
    for seq, (t, native_impl, comparator) in enumerate(pair_plans(data)):
        batch = t.batch if t.batch is not None else 1000

        def native(tag: str, impl: str = native_impl, op: str = t.op, b: int = batch) -> float | None:
            return measure_cell(op, b, impl, tag)

        def other(tag: str, c: tuple[str, ...] = comparator) -> float | None:
            if c[0] == 'ceiling':
                return measure_one_ceiling(cfg, admin, c[1], tag, progress)
            return measure_cell(c[2], int(c[3]), c[1], tag)

        entry: dict[str, Any] = {'native_impl': native_impl, 'native': [], 'against': [], 'ratios': []}
        for i in range(cfg.target_pairs):
            tag = f'pair{seq}-{i}'
            sides = (native, other) if i % 2 == 0 else (other, native)
            first, second = sides[0](tag + 'a'), sides[1](tag + 'b')
            a, b = (first, second) if i % 2 == 0 else (second, first)
            entry['native'].append(a)
            entry['against'].append(b)
            if a and b:
                entry['ratios'].append(a / b)
        entry['ratio'] = statistics.median(entry['ratios']) if entry['ratios'] else None
        out[t.label] = entry
    return out


def pair_steps(cfg: Config, data: dict[str, Any]) -> int:
    """Progress steps of :func:`measure_pairs` (a ceiling pair measures two streams)."""
    steps = 0
    for _, _, comparator in pair_plans(data):
        other = one_ceiling_steps(comparator[1]) if comparator[0] == 'ceiling' else 1
        steps += cfg.target_pairs * (1 + other)
    return steps
