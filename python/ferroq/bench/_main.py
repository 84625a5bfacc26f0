"""``ferroq bench``: the command line, and one run of the whole matrix."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import secrets
import sys
from collections.abc import Sequence
from dataclasses import asdict, replace
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlsplit

import redis

from ferroq._limits import MAX_COUNT
from ferroq.bench import _impls
from ferroq.bench._ceiling import ceiling_count, measure_ceilings, other_persistence
from ferroq.bench._common import BATCHES, NOISY_CORES, REDIS_ERRORS, Admin, BenchError, Config, Progress, Row
from ferroq.bench._extra import measure_latency, measure_rss, measure_scale
from ferroq.bench._paired import measure_pairs, pair_steps
from ferroq.bench._registry import IMPLS, OPERATIONS, Context, Impl
from ferroq.bench._render import add_ratios, evaluate_targets, plot, render_console, update_readme
from ferroq.bench._spark import SPARK_STEPS, measure_spark
from ferroq.bench._wire import stream_key

__all__ = ['JSON_SCHEMA', 'build_parser', 'config_from_args', 'main', 'plan', 'run']

JSON_SCHEMA = 2
QUICK_MESSAGES = 5_000
SCALE_RSS_MESSAGES = 10_000_000
#: Seconds the run waits for a server that is loading its data set (a restarted server with a big AOF).
LOADING_TIMEOUT = 600


def plan(cfg: Config) -> tuple[list[tuple[str, int, Impl]], dict[str, str]]:
    """The (operation, batch, implementation) cells to measure, and the implementations that cannot run here."""
    cells, unavailable = [], {}
    impls = [IMPLS[n] for n in (cfg.impls or tuple(IMPLS))]
    ready = []
    for impl in impls:
        reason = impl.available(cfg)
        if reason:
            unavailable[impl.name] = reason
        else:
            ready.append(impl)
    for op in cfg.ops or tuple(OPERATIONS):
        for batch in cfg.batches:
            cells += [(op, batch, impl) for impl in ready if impl.supports(op, batch)]
    return cells, unavailable


def _median(runs: list[Row]) -> Row:
    ok = sorted((r for r in runs if not r.failed), key=lambda r: r.msgs_per_s)
    row = ok[(len(ok) - 1) // 2] if ok else runs[-1]
    row.runs = [r.msgs_per_s for r in runs]
    row.partial = any(r.partial for r in runs)
    return row


def _measure_cell(cfg: Config, admin: Admin, op: str, batch: int, impl: Impl, seq: int, progress: Progress) -> Row:
    n = cfg.messages_for(batch, impl.caps.get(op))
    runs = []
    for rep in range(cfg.repeat):
        progress.begin(f'{op} ({batch}) {impl.name}', n)
        row = _measure_once(cfg, admin, op, batch, impl, f'{seq}-{rep}', n, progress)
        for retry in range(cfg.noise_retries):  # a noisy run is taken again; the quietest one is kept
            if row.failed or (row.bg_cores or 0.0) <= NOISY_CORES:
                break
            again = _measure_once(cfg, admin, op, batch, impl, f'{seq}-{rep}-{retry}', n, progress)
            again.retries = row.retries = retry + 1
            if not again.failed and (again.bg_cores or 0.0) < (row.bg_cores or 0.0):
                row = again
        runs.append(row)
        progress.end(row.note if row.failed else f'{row.msgs_per_s:,.0f} msgs/s' + (' (partial)' * row.partial))
    return _median(runs)


def _measure_once(
    cfg: Config, admin: Admin, op: str, batch: int, impl: Impl, tag: str, n: int, progress: Progress
) -> Row:
    ctx = Context(cfg, admin, f'fqb-{cfg.run_id}-{tag}', batch)
    try:
        row = impl.measure(ctx, op, n, progress)
    except Exception as exc:  # noqa: BLE001 -- report it and go on with the other cells
        row = Row(op, batch, impl.name, 0, 0.0, 0.0, note=f'failed: {type(exc).__name__}: {exc}'[:300])
    row.pure_python = impl.pure_python
    return row


def _pairs(
    cfg: Config, admin: Admin, rows: list[Row], ceilings: dict[str, Any], progress: Progress, switched: bool = False
) -> dict[str, Any]:
    """The targets' ratios from native and comparator timed back to back (see :mod:`ferroq.bench._paired`);
    ``switched``: those timed with and without persistence only."""
    data: dict[str, Any] = {'rows': [asdict(r) for r in rows], 'ceilings': ceilings}
    add_ratios(data, {name: op.ceiling for name, op in OPERATIONS.items()})
    progress.total += pair_steps(cfg, data, switched)

    def measure_cell(op: str, batch: int, impl: str, tag: str, calls: int | None) -> float | None:
        runner = IMPLS[impl]
        n = calls or cfg.messages_for(batch, runner.caps.get(op))
        progress.begin(f'pair: {op} ({batch}) {impl}' + (f', {n:,} calls' if calls else ''), 0)
        row = _measure_once(cfg, admin, op, batch, runner, tag, n, progress)
        progress.end(row.note if row.failed else f'{row.msgs_per_s:,.0f} msgs/s')
        return None if row.failed or not row.messages else row.msgs_per_s

    return measure_pairs(cfg, admin, data, measure_cell, progress, switched)


def _switched_pairs(
    cfg: Config, admin: Admin, rows: list[Row], ceilings: dict[str, Any], progress: Progress
) -> dict[str, Any]:
    """The pairs of the targets timed with and without persistence, again with the server's AOF switched (as
    the rfq ceilings are): ``{persistence, pairs}``, or ``{reason}`` when the AOF cannot be switched."""
    try:
        with other_persistence(admin) as label:
            return {'persistence': label, 'pairs': _pairs(cfg, admin, rows, ceilings, progress, switched=True)}
    except (BenchError, *REDIS_ERRORS) as exc:
        return {'reason': f'not timed with the AOF switched: {exc}'}


def _machine(admin: Admin) -> dict[str, Any]:
    import ferroq

    try:
        redis_version = str(admin.info('server').get('redis_version', 'unknown'))
    except REDIS_ERRORS:
        redis_version = 'unknown'
    model = None
    try:
        with open('/proc/cpuinfo', encoding='utf-8') as f:
            model = next((ln.split(':', 1)[1].strip() for ln in f if ln.startswith('model name')), None)
    except OSError:
        pass
    try:
        load: list[float] | None = list(os.getloadavg())
    except (OSError, AttributeError):
        load = None
    return {
        'cpu_count': os.cpu_count(),
        'cpu_model': model or platform.processor() or None,
        'platform': platform.platform(),
        'python_version': platform.python_version(),
        'redis_version': redis_version,
        'redis_py_version': redis.__version__,
        'ferroq_version': ferroq.__version__,
        'load_average': load,
    }


def _sweep_run(admin: Admin, run_id: str) -> int:
    """Delete whatever this run left (there should be nothing); returns how many keys that was."""
    left = 0
    for pattern in (f'rfq:fqb-{run_id}-*', f'rsmq:fqb-{run_id}-*', stream_key(f'fqb-{run_id}-*')):
        left += admin.sweep(pattern)
    queues = [q for q in admin.r.smembers('rsmq:QUEUES') if str(q).startswith(f'fqb-{run_id}-')]
    if queues:
        admin.r.srem('rsmq:QUEUES', *queues)
    return left


def run(cfg: Config, quiet: bool = False) -> dict[str, Any]:
    """Run the benchmark; returns the JSON document."""
    cfg = replace(cfg, run_id=cfg.run_id or f'{os.getpid()}{secrets.token_hex(2)}')
    admin = Admin(cfg.url)
    try:
        admin.info('server')  # fail early and clearly when the server is not there
        admin.wait_loaded(LOADING_TIMEOUT, lambda line: None if quiet else print(line, file=sys.stderr, flush=True))
    except REDIS_ERRORS as exc:
        admin.close()
        raise BenchError(f'cannot reach Redis: {exc}') from exc
    except BenchError:
        admin.close()
        raise
    try:
        started = datetime.now(timezone.utc).isoformat(timespec='seconds')
        machine = _machine(admin)
        cells, unavailable = plan(cfg)
        families = {OPERATIONS[op].family for op, _, _ in cells}
        latency_impls = [i for i in ('native', 'pure') if i in (cfg.impls or IMPLS) and i not in unavailable]
        native_ok = 'native' not in unavailable
        steps = len(cells) * cfg.repeat
        steps += ceiling_count(families) if cfg.ceiling else 0
        steps += 2 * len(latency_impls) if cfg.latency else 0
        steps += (2 if cfg.scale else 0) + (1 if cfg.rss_messages else 0)
        steps += SPARK_STEPS if cfg.spark_rows else 0
        progress = Progress(steps, quiet)
        progress.note(
            f'ferroq bench: {len(cells)} measurements, {cfg.size}-byte messages, Redis {machine["redis_version"]}'
            + (f'; not available: {", ".join(sorted(unavailable))}' if unavailable else '')
        )
        rows = [_measure_cell(cfg, admin, op, b, impl, i, progress) for i, (op, b, impl) in enumerate(cells)]
        ceilings = measure_ceilings(cfg, admin, families, progress) if cfg.ceiling else {}
        paired = _pairs(cfg, admin, rows, ceilings, progress) if cfg.target_pairs else {}
        paired_switched = _switched_pairs(cfg, admin, rows, ceilings, progress) if cfg.target_pairs else {}
        scale_impl = 'native' if native_ok else 'pure'
        latency = measure_latency(cfg, admin, latency_impls, progress) if cfg.latency else []
        scale = measure_scale(cfg, admin, scale_impl, progress) if cfg.scale else None
        rss = measure_rss(cfg, admin, scale_impl, cfg.rss_messages, progress) if cfg.rss_messages else None
        spark = measure_spark(cfg, admin, progress) if cfg.spark_rows else None
        leftover = _sweep_run(admin, cfg.run_id)
    finally:
        _impls.close_writers()
        admin.close()
    params = {k: v for k, v in asdict(cfg).items() if k not in ('url', 'rfq_python')}
    data: dict[str, Any] = {
        'schema': JSON_SCHEMA,
        'started_at': started,
        'url': _redact(cfg.url),
        'machine': machine,
        'params': params,
        'implementations': {i.name: {'pure_python': i.pure_python, 'doc': i.doc} for i in IMPLS.values()},
        'unavailable': unavailable,
        'rows': [asdict(r) for r in rows],
        'ceilings': ceilings,
        'paired': paired,
        'paired_switched': paired_switched,
        'latency': latency,
        'scale': scale,
        'rss': rss,
        'spark': spark,
        'leftover_keys': leftover,
    }
    finish(data)
    return data


def finish(data: dict[str, Any]) -> None:
    """Ratios and targets, from the rows and ceilings of ``data`` (also re-run on a loaded --from-json file)."""
    add_ratios(data, {name: op.ceiling for name, op in OPERATIONS.items()})
    data['targets'] = evaluate_targets(data)


def _redact(url: str) -> str:
    parts = urlsplit(url)
    return url.replace(f':{parts.password}@', ':***@') if parts.password else url


# --- the command line ----------------------------------------------------------------------------------------


def _positive_int(value: str) -> int:
    n = int(value)
    if n < 1:
        raise argparse.ArgumentTypeError(f'must be at least 1, got {n}')
    return n


def _choices(known: dict[str, Any], what: str) -> Any:
    def parse(value: str) -> tuple[str, ...]:
        names = tuple(v.strip() for v in value.split(',') if v.strip())
        bad = [n for n in names if n not in known]
        if bad or not names:
            raise argparse.ArgumentTypeError(f'unknown {what} {bad}; choose from {",".join(known)}')
        return names

    return parse


def _batches(value: str) -> tuple[int, ...]:
    try:
        sizes = tuple(sorted({int(v) for v in value.split(',') if v.strip()}))
    except ValueError:
        raise argparse.ArgumentTypeError(f'batch sizes are integers, got {value!r}') from None
    if not sizes or sizes[0] < 1 or sizes[-1] > MAX_COUNT:
        raise argparse.ArgumentTypeError(f'batch sizes are between 1 and {MAX_COUNT}')
    return sizes


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog='ferroq bench',
        description="Messages/s of every queue operation for ferroq's clients and the peer libraries, next to the "
        'server ceiling of the same command stream (redis-cli --pipe), on one Redis server.',
    )
    p.add_argument('--url', help='Redis URL (default: FERROQ_URL, RFQ_REDIS_HOST/PORT, else the embedded server)')
    p.add_argument('--quick', action='store_true', help=f'a smoke run of under a minute ({QUICK_MESSAGES} messages)')
    p.add_argument('--json', metavar='PATH', help='write the results as JSON to PATH')
    p.add_argument('--plot', metavar='PATH', help='draw a PNG bar chart to PATH (needs matplotlib: ferroq[bench])')
    p.add_argument(
        '--messages',
        type=_positive_int,
        default=None,
        help='messages per measurement at batch 1000; half at 100, a twentieth at 1 (100000)',
    )
    p.add_argument('--batch', type=_batches, default=BATCHES, help='comma-separated batch sizes (1,100,1000)')
    p.add_argument('--size', type=_positive_int, default=100, help='message body in bytes (100)')
    p.add_argument(
        '--impl',
        type=_choices(IMPLS, 'implementation'),
        default=(),
        help=f'comma-separated, from {",".join(IMPLS)} (all)',
    )
    p.add_argument(
        '--op',
        type=_choices(OPERATIONS, 'operation'),
        default=(),
        help=f'comma-separated, from {",".join(OPERATIONS)} (all)',
    )
    p.add_argument('--concurrency', type=_positive_int, default=4, help='asyncio tasks for the async clients (4)')
    p.add_argument('--repeat', type=_positive_int, default=1, help='runs per measurement; the median is kept (1)')
    p.add_argument('--time-limit', type=float, default=60.0, help='seconds per measurement before it stops (60)')
    p.add_argument(
        '--noise-retries',
        type=int,
        default=None,
        help='measure a cell again, up to N times, while other processes used over 20%% of a core (2; --quick 0)',
    )
    p.add_argument(
        '--target-pairs',
        type=int,
        default=None,
        help="after the matrix, time each target's native row and its comparator back to back, alternating, "
        "N times; the target's ratio is the median pair (5; --quick 1; 0 skips)",
    )
    p.add_argument('--no-ceiling', action='store_true', help='skip redis-cli --pipe and redis-benchmark')
    p.add_argument('--no-latency', action='store_true', help='skip the p50/p99 latency measurement')
    p.add_argument('--no-scale', action='store_true', help='skip claim+commit at 1k vs 100k queued')
    p.add_argument(
        '--rss-messages',
        type=int,
        default=None,
        help='messages in the generator-publish memory check; 0 skips it (1000000; --quick 20000)',
    )
    p.add_argument('--scale', action='store_true', help=f'the memory check with {SCALE_RSS_MESSAGES:,} messages')
    p.add_argument(
        '--spark-rows',
        type=int,
        default=None,
        help='rows of the Spark section (needs ferroq[spark] and Java); 0 skips it (1000000; --quick 100000)',
    )
    p.add_argument('--rfq-python', metavar='PATH', help='interpreter with rfq 1.4.0 (default: ./.venv-rfq/bin/python)')
    p.add_argument('--from-json', metavar='PATH', help='do not run: render the results of an earlier --json file')
    p.add_argument('--update-readme', metavar='PATH', help='replace the perf-table block of PATH (README.md)')
    return p


def config_from_args(args: argparse.Namespace, url: str) -> Config:
    rss = args.rss_messages
    if rss is None:
        rss = SCALE_RSS_MESSAGES if args.scale else 20_000 if args.quick else 1_000_000
    return Config(
        url=url,
        messages=args.messages or (QUICK_MESSAGES if args.quick else 100_000),
        size=args.size,
        batches=args.batch,
        impls=args.impl,
        ops=args.op,
        concurrency=args.concurrency,
        repeat=args.repeat,
        time_limit=args.time_limit,
        noise_retries=(0 if args.quick else 2) if args.noise_retries is None else max(args.noise_retries, 0),
        target_pairs=(1 if args.quick else 5) if args.target_pairs is None else max(args.target_pairs, 0),
        quick=args.quick,
        ceiling=not args.no_ceiling,
        latency=not args.no_latency,
        scale=not args.no_scale,
        rss_messages=max(rss, 0),
        ceiling_messages=20_000 if args.quick else 200_000,
        latency_calls=200 if args.quick else 2_000,
        rfq_python=args.rfq_python,
        spark_rows=max((100_000 if args.quick else 1_000_000) if args.spark_rows is None else args.spark_rows, 0),
    )


def _warnings(data: dict[str, Any]) -> None:
    noisy = [r for r in data['rows'] if (r.get('bg_cores') or 0) > NOISY_CORES]
    if noisy:
        worst = max(r['bg_cores'] for r in noisy)
        sys.stderr.write(
            f'ferroq bench: warning: other processes used up to {100 * worst:.0f}% of a core during {len(noisy)} '
            'measurement(s); those figures are noisy\n'
        )
    for impl, reason in (data.get('unavailable') or {}).items():
        sys.stderr.write(f'ferroq bench: {impl} not measured: {reason}\n')
    if data.get('leftover_keys'):
        sys.stderr.write(f'ferroq bench: warning: {data["leftover_keys"]} benchmark keys were left and deleted\n')


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``ferroq bench``; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        if args.from_json:
            with open(args.from_json, encoding='utf-8') as f:
                data: dict[str, Any] = json.load(f)
            if data.get('schema') != JSON_SCHEMA:
                raise BenchError(f'{args.from_json}: schema {data.get("schema")}, expected {JSON_SCHEMA}')
            finish(data)
        else:
            if args.plot and importlib.util.find_spec('matplotlib') is None:  # say so before a long run, not after
                raise BenchError('--plot needs matplotlib: pip install "ferroq[bench]"')
            from ferroq.server import resolve_url

            data = run(config_from_args(args, resolve_url(args.url)))
            if args.json:
                with open(args.json, 'w', encoding='utf-8') as f:
                    json.dump(data, f, indent=2)
                    f.write('\n')
        sys.stdout.write(render_console(data))
        if args.update_readme:
            update_readme(args.update_readme, data)
            sys.stderr.write(f'updated the performance table in {args.update_readme}\n')
        if args.plot:
            plot(data, args.plot)
            sys.stderr.write(f'wrote the chart to {args.plot}\n')
    except BenchError as exc:
        sys.stderr.write(f'ferroq bench: {exc}\n')
        return 1
    except KeyboardInterrupt:
        sys.stderr.write('ferroq bench: interrupted\n')
        return 130
    _warnings(data)
    return 1 if any(str(r.get('note', '')).startswith('failed') for r in data['rows']) else 0
