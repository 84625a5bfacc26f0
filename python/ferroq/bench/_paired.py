"""The targets' ratios, measured in pairs: native and its comparator timed back to back, in alternating order.

On a shared machine the speed of the server drifts by tens of percent within minutes (other tenants, an
AOF rewrite, the allocator): the matrix measures a native cell and its comparator (a ceiling, the best
pure-Python client, a peer library) minutes apart, and their ratio carries that drift. Here each target's
two sides are measured one right after the other, ``pairs`` times, the order alternating (AB, BA, AB, ...),
and the target's ratio is the median of the per-pair ratios. Targets against a reference figure (a peer
that cannot run here) have nothing to pair.

A single call (batch 1) takes about 100 µs, most of it the server's turn and the wake-ups of two processes,
and that drifts within a second: one run per side would time the drift as much as the calls. So each side
of a single-call pair is timed in :data:`SLICES` short runs over the same number of calls, interleaved with
the other side's (ABBA...), and the pair's ratio is that of the two sides' total times.

The targets about ferroq's own costs (``Target.both_persistences``) are then paired once more with the
server's AOF switched (``switched``; the caller switches it, as for the rfq ceilings), so each of their ratios
is known with and without persistence from one run.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from ferroq.bench._ceiling import measure_one_ceiling, one_ceiling_steps
from ferroq.bench._common import Admin, Config, Progress
from ferroq.bench._render import TARGETS, Target, best_native, best_pure, ceiling_key

__all__ = ['SLICES', 'measure_pairs', 'pair_plans', 'pair_steps']

#: Short runs per side of a single-call target's pair (see the module doc).
SLICES = 8

#: measures one matrix cell again: (operation, batch, implementation, tag, calls or None for the cell's
#: own count) -> msgs/s, or None if it failed
CellMeter = Callable[[str, int, str, str, 'int | None'], 'float | None']


def pair_plans(data: dict[str, Any], switched: bool = False) -> list[tuple[Target, str, tuple[str, ...]]]:
    """For each target that can be paired: the target, its native implementation and its comparator.

    The comparator is ``('ceiling', key)`` or ``('cell', impl, op, batch)``; the native side is the
    implementation whose row was best in the matrix. ``data`` needs its ratios (``ceiling_key``) added.
    ``switched``: only the targets timed with the AOF switched too (``Target.both_persistences``).
    """
    plans: list[tuple[Target, str, tuple[str, ...]]] = []
    rows = data['rows']
    for t in TARGETS:
        if switched and not t.both_persistences:
            continue
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
    cfg: Config,
    admin: Admin,
    data: dict[str, Any],
    measure_cell: CellMeter,
    progress: Progress,
    switched: bool = False,
) -> dict[str, Any]:
    """``{target label: {native_impl, native, against, ratios, ratio}}`` from ``cfg.target_pairs`` pairs each
    (and ``slices``, the short runs per side, for a single call's target). ``switched``: only the targets
    timed with and without persistence (``Target.both_persistences``; the caller switched the AOF)."""
    out: dict[str, Any] = {}
    prefix = 'switched-pair' if switched else 'pair'
    for seq, (t, native_impl, comparator) in enumerate(pair_plans(data, switched)):
        batch = t.batch if t.batch is not None else 1000
        slices = _slices(t)
        calls = max(1, cfg.messages_for(batch) // slices) if slices > 1 else None

        def native(
            tag: str, impl: str = native_impl, op: str = t.op, b: int = batch, n: int | None = calls
        ) -> float | None:
            return measure_cell(op, b, impl, tag, n)

        def other(tag: str, c: tuple[str, ...] = comparator, n: int | None = calls) -> float | None:
            if c[0] == 'ceiling':
                return measure_one_ceiling(cfg, admin, c[1], tag, progress, n)
            return measure_cell(c[2], int(c[3]), c[1], tag, n)

        entry: dict[str, Any] = {'native_impl': native_impl, 'native': [], 'against': [], 'ratios': []}
        if slices > 1:
            entry['slices'] = slices
        for i in range(cfg.target_pairs):
            rates: tuple[list[float | None], list[float | None]] = ([], [])  # native's slices, the other's
            for s in range(slices):
                tag = f'{prefix}{seq}-{i}' + (f'-{s}' if slices > 1 else '')
                order = (0, 1) if (i + s) % 2 == 0 else (1, 0)
                for k, side in enumerate(order):
                    rates[side].append((native, other)[side](tag + 'ab'[k]))
            a, b = _overall(rates[0]), _overall(rates[1])
            entry['native'].append(a)
            entry['against'].append(b)
            if a and b:
                entry['ratios'].append(a / b)
        entry['ratio'] = statistics.median(entry['ratios']) if entry['ratios'] else None
        out[t.label] = entry
    return out


def _overall(rates: list[float | None]) -> float | None:
    """Calls/s over slices of the same number of calls (their total time), None if one failed."""
    if not all(rates):
        return None
    return len(rates) / sum(1 / r for r in rates if r)


def _slices(t: Target) -> int:
    """Short runs per side of ``t``'s pairs: :data:`SLICES` for a single call's target, else one."""
    return SLICES if t.batch == 1 else 1


def pair_steps(cfg: Config, data: dict[str, Any], switched: bool = False) -> int:
    """Progress steps of :func:`measure_pairs` (a ceiling pair measures two streams)."""
    steps = 0
    for t, _, comparator in pair_plans(data, switched):
        other = one_ceiling_steps(comparator[1]) if comparator[0] == 'ceiling' else 1
        steps += cfg.target_pairs * _slices(t) * (1 + other)
    return steps
