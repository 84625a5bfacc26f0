"""The targets' ratios, measured in pairs: native and its comparator timed back to back, in alternating order.

On a shared machine the speed of the server drifts by tens of percent within minutes (other tenants, an
AOF rewrite, the allocator): the matrix measures a native cell and its comparator (a ceiling, the best
pure-Python client, a peer library) minutes apart, and their ratio carries that drift. Here each target's
two sides are measured one right after the other, ``pairs`` times, the order alternating (AB, BA, AB, ...),
and the target's ratio is the median of the per-pair ratios. Targets against a reference figure (a peer
that cannot run here) have nothing to pair. A target about no client in particular times both native
clients (sync and asyncio) in each pair, and one against the best pure-Python client its two fastest
candidates; each side takes the one fastest over the pairs (see :func:`pair_plans`).

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
from ferroq.bench._render import TARGETS, Target, best_native, best_pure_label, ceiling_key, native_rows, pure_rows

__all__ = ['PURE_CANDIDATES', 'SLICES', 'measure_pairs', 'pair_plans', 'pair_steps']

#: Short runs per side of a single-call target's pair (see the module doc).
SLICES = 8

#: measures one matrix cell again: (operation, batch, implementation, tag, calls or None for the cell's
#: own count) -> msgs/s, or None if it failed
CellMeter = Callable[[str, int, str, str, 'int | None'], 'float | None']


#: A side of a pair: ``('native', impl)``, ``('ceiling', key)`` or ``('cell', impl, op, batch)``.
Side = tuple[str, ...]

#: How many of the matrix's fastest pure-Python rows a ``best-pure`` target times in its pairs.
PURE_CANDIDATES = 2


def pair_plans(data: dict[str, Any], switched: bool = False) -> list[tuple[Target, tuple[str, ...], tuple[Side, ...]]]:
    """For each target that can be paired: the target, its native implementations and its comparators.

    The native side is the target's implementation or, for a target about none in particular, every native
    implementation with a row of its operation and batch (the matrix's fastest first); a ``best-pure``
    target's comparators are the matrix's :data:`PURE_CANDIDATES` fastest pure-Python rows. The pairs time
    them all and the target takes, on each side, the one fastest over its pairs: the matrix times each cell
    once, and two of them are often within its noise (the sync and the asyncio client), so which one stands
    for a side is not left to one measurement. A comparator is ``('ceiling', key)`` or
    ``('cell', impl, op, batch)``. ``data`` needs its ratios (``ceiling_key``) added. ``switched``: only the
    targets timed with the AOF switched too (``Target.both_persistences``).
    """
    plans: list[tuple[Target, tuple[str, ...], tuple[Side, ...]]] = []
    rows = data['rows']
    for t in TARGETS:
        if switched and not t.both_persistences:
            continue
        row = best_native(rows, t.op, t.batch, t.impl)
        if row is None or t.against.startswith('ref:'):
            continue
        natives = tuple(r['impl'] for r in native_rows(rows, t.op, row['batch'], t.impl))
        if t.against.startswith('ceiling'):
            key = ceiling_key(t, row)
            if key and ((data.get('ceilings') or {}).get(key) or {}).get('msgs_per_s'):
                plans.append((t, natives, (('ceiling', key),)))
        elif t.against == 'best-pure':
            pure = pure_rows(rows, t.op, row['batch'])[:PURE_CANDIDATES]
            if pure:
                plans.append((t, natives, tuple(('cell', p['impl'], t.op, str(row['batch'])) for p in pure)))
        else:
            impl, op, batch = t.against.rsplit(':', 2)
            if any(r['impl'] == impl and r['operation'] == op and r['batch'] == int(batch) for r in rows):
                plans.append((t, natives, (('cell', impl, op, batch),)))
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
    (and ``slices``, the short runs per side, for a single call's target; ``against_label``, the comparator's
    name, and ``candidates``, every side's rates, when a side had several). ``switched``: only the targets
    timed with and without persistence (``Target.both_persistences``; the caller switched the AOF)."""
    out: dict[str, Any] = {}
    prefix = 'switched-pair' if switched else 'pair'
    for seq, (t, natives, comparators) in enumerate(pair_plans(data, switched)):
        batch = t.batch if t.batch is not None else 1000
        slices = _slices(t)
        calls = max(1, cfg.messages_for(batch) // slices) if slices > 1 else None
        sides: list[Side] = [('native', impl) for impl in natives] + list(comparators)

        def measure(side: Side, tag: str, op: str = t.op, b: int = batch, n: int | None = calls) -> float | None:
            if side[0] == 'native':
                return measure_cell(op, b, side[1], tag, n)
            if side[0] == 'ceiling':
                return measure_one_ceiling(cfg, admin, side[1], tag, progress, n)
            return measure_cell(side[2], int(side[3]), side[1], tag, n)

        rates: list[list[float | None]] = [[] for _ in sides]  # per side, each pair's rate
        for i in range(cfg.target_pairs):
            runs: list[list[float | None]] = [[] for _ in sides]  # per side, this pair's slices
            for s in range(slices):
                tag = f'{prefix}{seq}-{i}' + (f'-{s}' if slices > 1 else '')
                order = range(len(sides)) if (i + s) % 2 == 0 else reversed(range(len(sides)))
                for k, side in enumerate(order):
                    runs[side].append(measure(sides[side], tag + 'abcdefgh'[k]))
            for side, got in enumerate(runs):
                rates[side].append(_overall(got))
        native = _fastest(rates, range(len(natives)))
        other = _fastest(rates, range(len(natives), len(sides)))
        entry: dict[str, Any] = {
            'native_impl': natives[native],
            'native': rates[native],
            'against': rates[other],
            'ratios': [a / b for a, b in zip(rates[native], rates[other]) if a and b],
        }
        if len(comparators) > 1:
            entry['against_label'] = best_pure_label(sides[other][1])
        if len(sides) > 2:
            entry['candidates'] = {_name(side): r for side, r in zip(sides, rates)}
        if slices > 1:
            entry['slices'] = slices
        entry['ratio'] = statistics.median(entry['ratios']) if entry['ratios'] else None
        out[t.label] = entry
    return out


def _fastest(rates: list[list[float | None]], sides: range) -> int:
    """Of ``sides``, the one whose median rate over the pairs is the highest (a failed run counts as none)."""
    return max(sides, key=lambda side: statistics.median([r or 0.0 for r in rates[side]]) if rates[side] else 0.0)


def _name(side: Side) -> str:
    return side[1] if side[0] != 'cell' else f'{side[1]} {side[2]}({side[3]})'


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
    for t, natives, comparators in pair_plans(data, switched):
        others = sum(one_ceiling_steps(c[1]) if c[0] == 'ceiling' else 1 for c in comparators)
        steps += cfg.target_pairs * _slices(t) * (len(natives) + others)
    return steps
