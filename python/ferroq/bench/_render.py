"""From the JSON document of a run: ratios, targets, the console and markdown tables, the README block, the PNG."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ferroq.bench._ceiling import CLAIM_ONE_REDIS_RS, PUBLISH_ONE_REDIS_RS, ROUND_TRIP
from ferroq.bench._common import BenchError

__all__ = [
    'README_END',
    'README_START',
    'REFERENCE',
    'TARGETS',
    'Target',
    'add_ratios',
    'best_native',
    'best_pure',
    'best_pure_label',
    'ceiling_key',
    'evaluate_targets',
    'native_rows',
    'plot',
    'pure_rows',
    'render_console',
    'render_markdown',
    'update_readme',
]

README_START = '<!-- perf-table:start -->'
README_END = '<!-- perf-table:end -->'

# Peers that cannot run here (Node.js), as measured on this machine kind (shared/reference/perf.md §3).
REFERENCE: dict[str, dict[str, Any]] = {
    'bullmq addBulk(1000)': {'msgs_per_s': 11_840.0, 'source': 'BullMQ 3.4.4 addBulk 1000, perf reference'},
    'bullmq worker': {
        'msgs_per_s': 1_271.0,
        'source': 'BullMQ 3.4.4 Worker, no-op processor, concurrency 1 (1,227 at 50), perf reference',
    },
    'rq simpleworker': {'msgs_per_s': 268.0, 'source': 'RQ 3.0 SimpleWorker.work(burst=True), perf reference'},
}


@dataclass(frozen=True)
class Target:
    """``best native row of (op, batch)`` ÷ ``against`` must be at least ``goal``.

    ``impl`` names the native implementation when the target is about one (the async worker); else the
    best native row stands for ferroq.

    ``against``: ``ceiling`` (the pipe stream of the same operation, or the round-trip rate at batch 1),
    ``ceiling:<key>`` (the ceiling named ``key``),
    ``best-pure`` (the fastest pure-Python row of the same operation and batch), ``<impl>:<op>:<batch>``
    (a peer's row) or ``ref:<name>`` (a :data:`REFERENCE` figure).
    """

    label: str
    op: str
    batch: int | None  # None: the best native row of the operation at any batch size
    against: str
    goal: float
    impl: str | None = None  # the native implementation the target is about; None: the best native row
    # its pairs are timed again with the server's AOF switched: the ratio with and without persistence
    both_persistences: bool = False


# The targets about ferroq's own costs (against the server's ceilings, the pure-Python client, its own sync
# client) are timed with and without persistence; the peers' (one message per call) and the reference
# figures are not.
TARGETS = (
    Target(
        'publish_batch(1000) vs the ceiling of HSET + one LPUSH per 1000',
        'publish',
        1000,
        'ceiling',
        0.85,
        both_persistences=True,
    ),
    Target(
        'publish_batch(1000) vs the best pure-Python client', 'publish', 1000, 'best-pure', 2.5, both_persistences=True
    ),
    Target(
        'claim+commit(1000) vs the ceiling of LMOVE/HGETALL/LREM/DEL',
        'claim+commit',
        1000,
        'ceiling',
        1.0,
        both_persistences=True,
    ),
    Target(
        'claim+commit(1000) vs the best pure-Python client',
        'claim+commit',
        1000,
        'best-pure',
        1.5,
        both_persistences=True,
    ),
    Target(
        'RSMQ receive+delete(1000) vs the ceiling of RSMQ per-message commands',
        'rsmq receive+delete',
        1000,
        'ceiling',
        2.0,
        both_persistences=True,
    ),
    # The async worker (AsyncWorker on the native asyncio client), as the goal is set; in the matrix the sync
    # Worker's row was sometimes the higher of the two by noise alone, and the pairs then timed that one.
    Target(
        'async worker (no-op handler) vs native claim+commit(1000)',
        'worker',
        None,
        'native:claim+commit:1000',
        0.8,
        impl='native-async',
        both_persistences=True,
    ),
    # A single call's own overhead: the same calls, one per round trip, through redis-rs alone (a publish's
    # script call; a claim's script call and body read). The sync client makes its calls one after the other
    # as the baseline does; the asyncio rows run 4 tasks whose calls overlap, which is not one call's cost.
    Target(
        'single publish vs its script call per redis-rs round trip',
        'publish',
        1,
        f'ceiling:{PUBLISH_ONE_REDIS_RS}',
        0.9,
        impl='native',
        both_persistences=True,
    ),
    Target(
        'single claim vs its calls per redis-rs round trip',
        'claim',
        1,
        f'ceiling:{CLAIM_ONE_REDIS_RS}',
        0.9,
        impl='native',
        both_persistences=True,
    ),
    Target('publish_batch(1000) vs rfq 1.4.0 publish_batch(1000)', 'publish', 1000, 'rfq:publish:1000', 10.0),
    Target('claim+commit(1000) vs rfq 1.4.0 consume+done', 'claim+commit', 1000, 'rfq:claim+commit:1', 50.0),
    Target('RSMQ send(1000) vs PyRSMQ sendMessage', 'rsmq send', 1000, 'pyrsmq:rsmq send:1', 40.0),
    Target('RSMQ receive+delete(1000) vs PyRSMQ', 'rsmq receive+delete', 1000, 'pyrsmq:rsmq receive+delete:1', 40.0),
    Target('publish_batch(1000) vs BullMQ addBulk(1000)', 'publish', 1000, 'ref:bullmq addBulk(1000)', 20.0),
    Target('worker (no-op handler) vs BullMQ Worker', 'worker', None, 'ref:bullmq worker', 20.0),
    Target('worker (no-op handler) vs RQ SimpleWorker (burst)', 'worker', None, 'ref:rq simpleworker', 20.0),
)


def _ok(row: dict[str, Any]) -> bool:
    return bool(row.get('msgs_per_s')) and not str(row.get('note', '')).startswith(('failed', 'unavailable'))


def _ceiling_of(row: dict[str, Any], ceilings: dict[str, Any], op_ceiling: dict[str, str | None]) -> str | None:
    key = ROUND_TRIP if row['batch'] == 1 else op_ceiling.get(row['operation'])
    return key if key and (ceilings.get(key) or {}).get('msgs_per_s') else None


def add_ratios(data: dict[str, Any], op_ceiling: dict[str, str | None]) -> None:
    """Fill each row's ``ceiling_key``/``ratio_ceiling`` and ``best_pure_impl``/``ratio_best_pure``."""
    rows, ceilings = data['rows'], data.get('ceilings') or {}
    best: dict[tuple[str, int], dict[str, Any]] = {}
    for r in rows:
        if r.get('pure_python') and _ok(r):
            k = (r['operation'], r['batch'])
            if k not in best or r['msgs_per_s'] > best[k]['msgs_per_s']:
                best[k] = r
    for r in rows:
        if not _ok(r):
            continue
        key = _ceiling_of(r, ceilings, op_ceiling)
        if key:
            r['ceiling_key'] = key
            r['ratio_ceiling'] = r['msgs_per_s'] / ceilings[key]['msgs_per_s']
        b = best.get((r['operation'], r['batch']))
        if b is not None:
            r['best_pure_impl'] = b['impl']
            r['ratio_best_pure'] = r['msgs_per_s'] / b['msgs_per_s']


def native_rows(
    rows: list[dict[str, Any]], op: str, batch: int | None, impl: str | None = None
) -> list[dict[str, Any]]:
    """The native rows of ``op`` (at ``batch``, unless None; of ``impl`` only, if given), fastest first."""
    cands = [
        r
        for r in rows
        if not r.get('pure_python')
        and r['operation'] == op
        and (batch is None or r['batch'] == batch)
        and (impl is None or r['impl'] == impl)
        and _ok(r)
    ]
    return sorted(cands, key=lambda r: -r['msgs_per_s'])


def best_native(
    rows: list[dict[str, Any]], op: str, batch: int | None, impl: str | None = None
) -> dict[str, Any] | None:
    """The fastest native row of ``op`` (at ``batch``, unless None; of ``impl`` only, if given), or None."""
    ranked = native_rows(rows, op, batch, impl)
    return ranked[0] if ranked else None


def pure_rows(rows: list[dict[str, Any]], op: str, batch: int) -> list[dict[str, Any]]:
    """The pure-Python rows of ``op`` at ``batch``, fastest first."""
    cands = [r for r in rows if r.get('pure_python') and r['operation'] == op and r['batch'] == batch and _ok(r)]
    return sorted(cands, key=lambda r: -r['msgs_per_s'])


def best_pure(rows: list[dict[str, Any]], op: str, batch: int) -> dict[str, Any] | None:
    """The fastest pure-Python row of ``op`` at ``batch``, or None."""
    ranked = pure_rows(rows, op, batch)
    return ranked[0] if ranked else None


def best_pure_label(impl: str) -> str:
    """How a target names its best pure-Python comparator (the matrix's, or the one its pairs chose)."""
    return f'best pure-Python ({impl})'


def ceiling_key(t: Target, row: dict[str, Any]) -> str | None:
    """The ceiling a ``ceiling`` or ``ceiling:<key>`` target compares ``row`` (its best native row) with."""
    return row.get('ceiling_key') if t.against == 'ceiling' else t.against.split(':', 1)[1]


def _denominator(t: Target, data: dict[str, Any], row: dict[str, Any]) -> tuple[float | None, str]:
    rows, ceilings = data['rows'], data.get('ceilings') or {}
    if t.against.startswith('ceiling'):
        key = ceiling_key(t, row)
        value: float | None = (ceilings.get(key) or {}).get('msgs_per_s') if key else None
        return value, f'ceiling ({key if value else "not measured"})'
    if t.against == 'best-pure':
        b = best_pure(rows, t.op, row['batch'])
        if b is None:
            return None, best_pure_label('none measured')
        return b['msgs_per_s'], best_pure_label(b['impl'])
    if t.against.startswith('ref:'):
        ref = REFERENCE[t.against[4:]]
        return ref['msgs_per_s'], f'{t.against[4:]} (reference figure)'
    impl, op, batch = t.against.rsplit(':', 2)
    for r in rows:
        if r['impl'] == impl and r['operation'] == op and r['batch'] == int(batch) and _ok(r):
            return r['msgs_per_s'], f'{impl} {op}({batch})'
    return None, f'{impl} {op}({batch}) (not measured)'


def _pretty(against: str) -> str:
    if against.startswith('ceiling:'):
        return f'ceiling ({against[8:]})'
    if against.startswith('ref:'):
        return f'{against[4:]} (reference figure)'
    if against.count(':') == 2:
        impl, op, batch = against.split(':')
        return f'{impl} {op}({batch})'
    return against


def evaluate_targets(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Each target with its measured ratio and ``met`` (True/False), or ``met`` None and why it was not measured."""
    out = []
    for t in TARGETS:
        entry: dict[str, Any] = {'target': t.label, 'goal': t.goal, 'ratio': None, 'met': None}
        row = best_native(data['rows'], t.op, t.batch, t.impl)
        if row is None:
            entry['against'] = _pretty(t.against)
            entry['reason'] = f'no native {t.op} in this run'
        else:
            value, label = _denominator(t, data, row)
            entry.update({'impl': row['impl'], 'msgs_per_s': row['msgs_per_s'], 'against': label, 'of': value})
            if value:
                entry['ratio'] = row['msgs_per_s'] / value
            pair = (data.get('paired') or {}).get(t.label)
            if pair and pair.get('ratio'):
                # the paired figures replace the matrix's: both sides were timed back to back (see _paired)
                entry.update({'matrix_ratio': entry['ratio'], **_pair_figures(pair)})
            if entry['ratio']:
                entry['met'] = entry['ratio'] >= t.goal
            else:
                entry['reason'] = 'not measured in this run'
        if t.both_persistences and data.get('paired_switched'):
            entry['switched'] = _switched(t, data['paired_switched'])
        out.append(entry)
    return out


def _switched(t: Target, switched: dict[str, Any]) -> dict[str, Any]:
    """Target ``t``'s pairs timed with the server's AOF switched: ratio, pair ratios and ``met``, or why not."""
    if 'reason' in switched:
        return {'ratio': None, 'met': None, 'reason': switched['reason']}
    pair = (switched.get('pairs') or {}).get(t.label) or {}
    out: dict[str, Any] = {'persistence': switched['persistence'], 'ratio': pair.get('ratio'), 'met': None}
    if out['ratio']:
        out.update({**_pair_figures(pair), 'met': out['ratio'] >= t.goal})
    else:
        out['reason'] = 'not measured in this run'
    return out


def _pair_figures(pair: dict[str, Any]) -> dict[str, Any]:
    """A target's figures from its pairs (``measure_pairs``): the native side, the medians, the ratios, and the
    comparator's name when the pairs chose it among several (the best pure-Python client)."""
    figures = {
        'impl': pair['native_impl'],
        'msgs_per_s': _median(pair['native']),
        'of': _median(pair['against']),
        'ratio': pair['ratio'],
        'pair_ratios': pair['ratios'],
    }
    if pair.get('against_label'):
        figures['against'] = pair['against_label']
    return figures


def _median(values: list[float | None]) -> float | None:
    ok = [v for v in values if v]
    return statistics.median(ok) if ok else None


# --- formatting ---------------------------------------------------------------------------------------------


def _num(x: float | None, fmt: str = ',.0f') -> str:
    return '' if x is None else format(x, fmt)


def _ratio(x: float | None) -> str:
    return '' if x is None else f'{x:.2f}×'


def _pct(x: float | None) -> str:
    return '' if x is None else f'{100 * x:.0f}%'


MAIN_HEADERS = (
    'operation',
    'batch',
    'impl',
    'msgs/s',
    'vs ceiling',
    'vs best pure',
    'client µs/msg',
    'server µs/msg',
    'bg %core',
)


def _main_rows(data: dict[str, Any]) -> list[list[str]]:
    lines = []
    for r in data['rows']:
        if not _ok(r):
            lines.append(
                [r['operation'], str(r['batch']), r['impl'], r.get('note') or 'no messages', '', '', '', '', '']
            )
            continue
        rate = _num(r['msgs_per_s']) + (' (partial)' if r.get('partial') else '')
        lines.append(
            [
                r['operation'],
                str(r['batch']),
                r['impl'],
                rate,
                _pct(r.get('ratio_ceiling')),
                _ratio(r.get('ratio_best_pure')),
                _num(r.get('client_us_per_msg'), '.1f'),
                _num(r.get('server_us_per_msg'), '.1f'),
                _num(None if r.get('bg_cores') is None else 100 * r['bg_cores']),
            ]
        )
    return lines


CEILING_HEADERS = (
    'ceiling',
    'commands per message',
    'persistence',
    'msgs/s',
    'client µs/msg',
    'server µs/msg',
    'bg %core',
)


def _ceiling_rows(data: dict[str, Any]) -> list[list[str]]:
    lines = []
    for key, c in (data.get('ceilings') or {}).items():
        if not c.get('msgs_per_s'):
            lines.append([key, 'not measured: ' + str(c.get('reason', '')), '', '', '', '', ''])
            continue
        cmds = c.get('commands') or c.get('command', '')
        bg = c.get('bg_cores')
        lines.append(
            [
                key,
                cmds,
                c.get('persistence', ''),
                _num(c['msgs_per_s']),
                _num(c.get('client_us_per_msg'), '.1f'),
                _num(c.get('server_us_per_msg'), '.1f'),
                _num(None if bg is None else 100 * bg),
            ]
        )
    return lines


LATENCY_HEADERS = ('latency', 'impl', 'calls', 'p50 µs', 'p99 µs', 'max µs')


def _latency_rows(data: dict[str, Any]) -> list[list[str]]:
    return [
        [e['operation'], e['impl'], str(e['calls']), _num(e['p50_us']), _num(e['p99_us']), _num(e['max_us'])]
        if 'p50_us' in e
        else ['', e.get('impl', ''), e.get('reason', ''), '', '', '']
        for e in data.get('latency') or []
    ]


TARGET_HEADERS = ('target', 'native', 'against', 'ratio', 'per pair', 'goal', 'met')


def _met(t: dict[str, Any]) -> str:
    return 'n/a: ' + t.get('reason', '') if t['met'] is None else ('yes' if t['met'] else 'NO')


def _target_line(t: dict[str, Any]) -> list[str]:
    native = f'{t["impl"]} {_num(t["msgs_per_s"])}' if t.get('impl') else ''
    against = t.get('against', '') + (f' {_num(t["of"])}' if t.get('of') else '')
    pairs = ' '.join(f'{r:.2f}' for r in t.get('pair_ratios') or [])
    return [t['target'], native, against, _ratio(t['ratio']), pairs, f'≥ {t["goal"]:g}×', _met(t)]


def _target_rows(data: dict[str, Any]) -> list[list[str]]:
    return [_target_line(t) for t in data.get('targets') or []]


def _switched_headers(data: dict[str, Any]) -> tuple[str, ...]:
    """:data:`TARGET_HEADERS` of the targets timed again with the AOF switched, its label in the first."""
    label = (data.get('paired_switched') or {}).get('persistence', 'AOF switched')
    return (f'target, {label}', *TARGET_HEADERS[1:])


def _switched_rows(data: dict[str, Any]) -> list[list[str]]:
    rows = []
    for t in data.get('targets') or []:
        s = t.get('switched')
        if s:
            # the target, its goal and its comparator's label are the main row's; the figures the switched pairs'
            rows.append(_target_line({'target': t['target'], 'goal': t['goal'], 'against': t.get('against', ''), **s}))
    return rows


SPARK_HEADERS = ('Spark, local[2], the same DataFrame', 'rows/s', 'format("ferroq") ÷ this', 'goal', 'met')
#: The Spark section's goals: the Arrow writer against the hand-written peer and the ceiling, the reader's rate.
SPARK_GOALS = {'foreach_partition': 3.0, 'ceiling': 0.7}
SPARK_READ_GOAL = 100_000


def _spark_rows(data: dict[str, Any]) -> list[list[str]]:
    spark = data.get('spark') or {}
    writer = (spark.get('arrow_writer') or {}).get('msgs_per_s')
    if not writer:
        return []
    labels = {
        'arrow_writer': 'format("ferroq") writer (Arrow, Rust core)',
        'foreach_partition': 'foreachPartition + redis-py pipeline',
        'map_in_arrow': 'mapInArrow + redis-py pipeline',
        'ceiling': "server ceiling of the writer's command stream",
        'arrow_writer_stream': 'format("ferroq") writer to a stream',
        'read_topic': 'streaming read of a topic (end to end)',
        'read_stream': 'streaming read of a stream (end to end)',
    }
    lines = []
    for key, label in labels.items():
        entry = spark.get(key) or {}
        rate = entry.get('msgs_per_s')
        if rate is None:
            lines.append([label, 'n/a: ' + str(entry.get('reason', 'not measured')), '', '', ''])
            continue
        ratio = writer / rate if key in ('foreach_partition', 'map_in_arrow', 'ceiling') else None
        goal, met = '', ''
        if key in SPARK_GOALS and ratio is not None:
            goal, met = f'≥ {SPARK_GOALS[key]:g}×', 'yes' if ratio >= SPARK_GOALS[key] else 'NO'
        if key.startswith('read_'):
            goal, met = f'≥ {SPARK_READ_GOAL:,} msgs/s', 'yes' if rate >= SPARK_READ_GOAL else 'NO'
        lines.append([label, _num(rate), _ratio(ratio) if ratio is not None else '', goal, met])
    return lines


def _notes(data: dict[str, Any]) -> list[str]:
    out = []
    scale = data.get('scale')
    if scale and scale.get('depths'):
        parts = [
            f'{int(d):,} queued: {_num(v["msgs_per_s"])} msgs/s'
            + (f' ({v["server_us_per_msg"]:.1f} server µs/msg)' if v.get('server_us_per_msg') else '')
            for d, v in scale['depths'].items()
        ]
        ratio = scale.get('ratio')
        verdict = '' if ratio is None else f' (ratio {ratio:.2f}: {"holds" if ratio >= 0.9 else "FALLS"})'
        rounds = f', in {scale["rounds"]} alternating rounds each' if scale.get('rounds') else ''
        out.append(
            f'Scale, {scale["impl"]} claim+commit({scale["batch"]}){rounds}: ' + ', '.join(parts) + verdict + '.'
        )
    rss = data.get('rss')
    if rss and 'peak_mib' in rss:
        rate = f', {_num(rss["msgs_per_s"])} msgs/s' if rss.get('msgs_per_s') else ''
        verdict = {True: 'bounded', False: 'grows with the input', None: 'no growth seen at this size'}[rss['bounded']]
        out.append(
            f'Memory, {rss["impl"]} publish_stream of a {rss["messages"]:,}-message generator: RSS '
            f'{rss["base_mib"]:.0f} → {rss["peak_mib"]:.0f} MiB, {rss["bytes_per_msg"]:.0f} bytes/msg{rate}: '
            f'{verdict}.' + (f' {rss["reason"]}.' if rss.get('reason') else '')
        )
    return out


def _caption(data: dict[str, Any]) -> str:
    m, p = data['machine'], data['params']
    bg = [r['bg_cores'] for r in data['rows'] if r.get('bg_cores') is not None]
    noise = f' Other processes used at most {100 * max(bg):.0f}% of a core during a measurement.' if bg else ''
    return (
        f'{p["size"]}-byte messages; up to {p["messages"]:,} per measurement at batch 1000 (fewer at smaller '
        f'batches and for the slow peers); {p["concurrency"]} asyncio tasks for the async clients; '
        f'median of {p["repeat"]}. ferroq {m["ferroq_version"]}, Redis {m["redis_version"]}, '
        f'Python {m["python_version"]}, {m["cpu_count"]} CPUs ({m.get("cpu_model") or m["platform"]}), '
        f'{data["started_at"][:10]}.{noise}'
    )


def _md(headers: Iterable[str], rows: list[list[str]], left: int) -> list[str]:
    hs = list(headers)
    out = ['| ' + ' | '.join(hs) + ' |', '|' + '|'.join('---' if i < left else '---:' for i in range(len(hs))) + '|']
    return out + ['| ' + ' | '.join(c.replace('|', '\\|') for c in r) + ' |' for r in rows]


def _console(headers: Iterable[str], rows: list[list[str]], left: int) -> list[str]:
    hs = list(headers)
    table = [hs, *rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(hs))]
    lines = [
        '  '.join((c.ljust(widths[i]) if i < left else c.rjust(widths[i])) for i, c in enumerate(r)).rstrip()
        for r in table
    ]
    lines.insert(1, '-' * max(len(x) for x in lines))
    return lines


def _sections(data: dict[str, Any]) -> list[tuple[tuple[str, ...], list[list[str]], int]]:
    out: list[tuple[tuple[str, ...], list[list[str]], int]] = [(MAIN_HEADERS, _main_rows(data), 3)]
    for headers, rows, left in (
        (CEILING_HEADERS, _ceiling_rows(data), 2),
        (LATENCY_HEADERS, _latency_rows(data), 2),
        (TARGET_HEADERS, _target_rows(data), 3),
        (_switched_headers(data), _switched_rows(data), 3),
        (SPARK_HEADERS, _spark_rows(data), 1),
    ):
        if rows:
            out.append((headers, rows, left))
    return out


def render_markdown(data: dict[str, Any]) -> str:
    """The README performance block (markdown) from the JSON of ``ferroq bench --json``."""
    blocks = ['\n'.join(_md(headers, rows, left)) for headers, rows, left in _sections(data)]
    return '\n\n'.join([*blocks, *_notes(data), _caption(data)]) + '\n'


def render_console(data: dict[str, Any]) -> str:
    """The same tables, aligned for a terminal."""
    out: list[str] = []
    for headers, rows, left in _sections(data):
        out += [*_console(headers, rows, left), '']
    out += [*_notes(data), '', _caption(data)]
    return '\n'.join(out) + '\n'


def update_readme(path: str, data: dict[str, Any]) -> None:
    """Replace what is between the perf-table markers of ``path`` with :func:`render_markdown`."""
    with open(path, encoding='utf-8') as f:
        text = f.read()
    start, end = text.find(README_START), text.find(README_END)
    if start < 0 or end < start:
        raise BenchError(f'{path} has no {README_START} ... {README_END} block')
    text = f'{text[: start + len(README_START)]}\n{render_markdown(data)}{text[end:]}'
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text)


def plot(data: dict[str, Any], path: str) -> None:
    """A PNG bar chart of msgs/s per operation and batch (log scale), with each operation's ceiling."""
    try:
        import matplotlib

        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
    except ImportError:
        raise BenchError('--plot needs matplotlib: pip install "ferroq[bench]"') from None
    rows = [r for r in data['rows'] if _ok(r)]
    ops = list(dict.fromkeys(r['operation'] for r in rows))
    if not ops:
        raise BenchError('--plot: no measured rows to draw')
    impls = list(dict.fromkeys(r['impl'] for r in rows))
    colours = {impl: plt.get_cmap('tab10')(i % 10) for i, impl in enumerate(impls)}
    per_op = [[r for r in rows if r['operation'] == op] for op in ops]
    heights = [len(mine) + 2 for mine in per_op]  # bars plus room for the title and ticks
    fig, axes = plt.subplots(
        len(ops), 1, figsize=(10, 0.25 * sum(heights) + 1), squeeze=False, gridspec_kw={'height_ratios': heights}
    )
    for ax, op, mine in zip(axes[:, 0], ops, per_op):
        labels = [f'{r["impl"]} ({r["batch"]})' for r in mine]
        ax.barh(labels, [r['msgs_per_s'] for r in mine], color=[colours[r['impl']] for r in mine])
        for key in dict.fromkeys(r.get('ceiling_key') for r in mine):
            c = (data.get('ceilings') or {}).get(key or '')
            if c and c.get('msgs_per_s'):
                ax.axvline(c['msgs_per_s'], linestyle='--', color='grey')
                ax.text(c['msgs_per_s'], len(mine) - 0.5, f' {key}', color='grey', fontsize=7, va='top')
        ax.set_xscale('log')
        ax.set_title(op, fontsize=10, loc='left')
        ax.invert_yaxis()
        ax.tick_params(which='both', labelsize=7)
    axes[-1, 0].set_xlabel('messages/s (log scale); dashed: the server ceiling')
    fig.suptitle(f'ferroq bench, {data["started_at"][:10]}', fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
