"""``ferroq bench``: a first throughput benchmark of the rfq topic operations.

It measures, on the same Redis server and in one run:

* ``publish_batch``: messages/s publishing ``--messages`` messages in batches of ``--batch``;
* ``claim+commit``: messages/s draining them again with ``claim(count=batch)`` then ``commit``;

for the native client (``native``), the native asyncio client (``native-async``), the pure-Python
client (``pure``) and its asyncio twin (``pure-async``). Async clients run ``--concurrency`` tasks,
as an asyncio application would. The server ceiling comes from ``redis-benchmark -P 64 -t lpush``
(and ``-P 1 -c 1`` for the round-trip rate) against the same server.

Every measurement uses its own fresh topic and deletes it afterwards (no keys are left behind).
``--json`` writes machine info, parameters and every row; ``--update-readme`` renders the rows as the
README's performance table. Only the standard library and redis-py (a ferroq dependency) are used.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import re
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal, Protocol
from urllib.parse import parse_qs, unquote, urlsplit

import redis

from ferroq.types import Message

__all__ = ['IMPLEMENTATIONS', 'main', 'render_table', 'update_readme']

IMPLEMENTATIONS = ('native', 'native-async', 'pure', 'pure-async')
PUBLISH = 'publish_batch'
CLAIM_COMMIT = 'claim+commit'
README_START = '<!-- perf-table:start -->'
README_END = '<!-- perf-table:end -->'
JSON_SCHEMA = 1
_QUICK_MESSAGES = 2000
_MAX_COUNT = 10000  # the protocol's largest claim count / batch
_LEASE = 300.0  # long enough that no lease expires during a measurement
_REDIS_ERRORS = (redis.RedisError, OSError)
_NOISY_CORES = 0.2  # CPU used by other processes above which a measurement is flagged as noisy


# Structural types of what the benchmark uses, satisfied by the native and the pure clients alike.
class _SyncTopic(Protocol):
    def publish_batch(self, messages: list[dict[str, str]], front: bool = ...) -> list[str]: ...
    def claim(self, count: int = ..., block: float | None = ..., lease: float = ...) -> list[Message]: ...
    def commit(self, messages: list[Message]) -> list[str]: ...
    def purge(self, queue: Literal['backlog', 'nextlog'] = ...) -> int: ...


class _SyncClient(Protocol):
    def topic(self, name: str) -> Any: ...
    def close(self) -> None: ...


class _AsyncTopic(Protocol):
    def publish_batch(self, messages: list[dict[str, str]], front: bool = ...) -> Awaitable[list[str]]: ...
    def claim(self, count: int = ..., block: float | None = ..., lease: float = ...) -> Awaitable[list[Message]]: ...
    def commit(self, messages: list[Message]) -> Awaitable[list[str]]: ...
    def purge(self, queue: Literal['backlog', 'nextlog'] = ...) -> Awaitable[int]: ...


class _AsyncClient(Protocol):
    def topic(self, name: str) -> Any: ...
    def close(self) -> Awaitable[None]: ...


@dataclass
class Config:
    """The parameters of one run (recorded in the JSON output)."""

    url: str
    messages: int
    batch: int
    size: int
    impls: list[str]
    concurrency: int
    repeat: int
    time_limit: float
    quick: bool
    ceiling: bool

    def payload(self) -> dict[str, str]:
        """One message: the single field ``payload`` holding ``size`` ASCII bytes."""
        return {'payload': ('ferroq' * (self.size // 6 + 1))[: self.size]}


@dataclass
class Row:
    """One measured operation of one implementation (the median over ``--repeat`` runs)."""

    operation: str
    impl: str
    messages: int
    seconds: float
    msgs_per_s: float
    client_us_per_msg: float | None = None
    server_us_per_msg: float | None = None
    partial: bool = False
    note: str = ''
    bg_cores: float | None = None
    runs: list[float] = field(default_factory=list)
    ratio_pure: float | None = None
    ratio_ceiling: float | None = None


class BenchError(Exception):
    """A run that cannot go on (no server, bad arguments)."""


# --- Redis side: admin connection, server CPU, clean-up -----------------------------------------------


class _Admin:
    """A plain redis-py connection for what the clients do not offer: INFO, and deleting leftovers."""

    def __init__(self, url: str) -> None:
        self._r = redis.Redis.from_url(url, decode_responses=True, socket_timeout=30)

    def info(self, section: str) -> dict[str, Any]:
        reply: dict[str, Any] = self._r.info(section)
        return reply

    def server_cpu(self) -> float | None:
        """CPU seconds used by redis-server so far (user + sys)."""
        try:
            info = self.info('cpu')
            return float(info['used_cpu_user']) + float(info['used_cpu_sys'])
        except (*_REDIS_ERRORS, KeyError, ValueError):
            return None

    def exists(self, key: str) -> bool:
        return bool(self._r.exists(key))

    def delete(self, *keys: str) -> int:
        return int(self._r.delete(*keys)) if keys else 0

    def scan_keys(self, pattern: str, limit: int = 1_000_000) -> list[str]:
        """Keys matching ``pattern`` (SCAN, never KEYS), at most ``limit``."""
        found: list[str] = []
        for key in self._r.scan_iter(match=pattern, count=1000):
            found.append(str(key))
            if len(found) >= limit:
                break
        return found

    def sweep(self, pattern: str) -> int:
        """Delete every key matching ``pattern``; returns how many were deleted."""
        deleted = 0
        for _ in range(10_000):  # bounded: each pass deletes up to 10000 keys
            keys = self.scan_keys(pattern, limit=10_000)
            if not keys:
                break
            deleted += sum(self.delete(*keys[i : i + 500]) for i in range(0, len(keys), 500))
        return deleted

    def close(self) -> None:
        self._r.close()


# --- progress and measurement helpers -----------------------------------------------------------------


class _Progress:
    """A one-line progress report on stderr (rewritten in place on a terminal)."""

    def __init__(self, label: str, total: int) -> None:
        self.label = label
        self.total = total
        self.tty = sys.stderr.isatty()
        self._last = 0.0

    def update(self, done: int) -> None:
        now = time.perf_counter()
        if self.tty and now - self._last >= 0.2:
            self._last = now
            sys.stderr.write(f'\r  {self.label}: {done:,}/{self.total:,}   ')
            sys.stderr.flush()

    def finish(self, row: Row) -> None:
        end = '\r' if self.tty else ''
        extra = ' (partial)' if row.partial else ''
        sys.stderr.write(
            f'{end}  {self.label}: {row.messages:,} msgs in {row.seconds:.2f} s = {row.msgs_per_s:,.0f} msgs/s{extra}\n'
        )
        sys.stderr.flush()


@dataclass
class _Meter:
    """Wall clock, this process's CPU and redis-server's CPU around one measurement."""

    admin: _Admin
    wall: float = 0.0
    cpu: float = 0.0
    server: float | None = None
    machine: float | None = None

    def start(self) -> None:
        self.server = self.admin.server_cpu()
        self.machine = _machine_busy()
        self.cpu = time.process_time()
        self.wall = time.perf_counter()

    def stop(self, operation: str, impl: str, n: int, partial: bool, note: str = '') -> Row:
        seconds = time.perf_counter() - self.wall
        cpu = time.process_time() - self.cpu
        machine_end = _machine_busy()
        server_end = self.admin.server_cpu()
        server = None if self.server is None or server_end is None else server_end - self.server
        bg = None
        if self.machine is not None and machine_end is not None and server is not None and seconds > 0:
            # CPU used by everything else on the machine (a build, another job): the noise of this row
            bg = max(0.0, (machine_end - self.machine - cpu - server) / seconds)
        return Row(
            operation=operation,
            impl=impl,
            messages=n,
            seconds=seconds,
            msgs_per_s=n / seconds if seconds > 0 else 0.0,
            client_us_per_msg=_per_msg(cpu, n),
            server_us_per_msg=None if server is None else _per_msg(server, n),
            partial=partial,
            note=note,
            bg_cores=bg,
        )


def _machine_busy() -> float | None:
    """CPU seconds all processes of the machine have used since boot (Linux /proc/stat), else None."""
    try:
        with open('/proc/stat', encoding='ascii') as f:
            ticks = [int(x) for x in f.readline().split()[1:]]
        # user nice system idle iowait irq softirq steal ...: everything but idle and iowait is busy
        return (sum(ticks[:8]) - ticks[3] - ticks[4]) / os.sysconf('SC_CLK_TCK')
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def _per_msg(seconds: float, n: int) -> float | None:
    return seconds / n * 1e6 if n else None


def _chunks(cfg: Config) -> list[int]:
    """Sizes of the publish_batch calls: ``messages`` split into batches."""
    full, rest = divmod(cfg.messages, cfg.batch)
    return [cfg.batch] * full + ([rest] if rest else [])


def _drain_note(done: int, target: int, admin: _Admin, name: str) -> str:
    """'' after a full drain that left no keys (a protocol invariant), else what went wrong."""
    if done < target:
        return f'drained {done} of {target}'
    left = len(admin.scan_keys(f'rfq:{name}:*', limit=100))
    return f'{left} keys left after a full drain' if left else ''


def _report(rows: list[Row], quiet: bool) -> list[Row]:
    if not quiet:
        for row in rows:
            _Progress(f'{row.impl} {row.operation}', 0).finish(row)
    return rows


# --- the sync implementations ---------------------------------------------------------------------------


def _publish_sync(topic: _SyncTopic, cfg: Config, batch: list[dict[str, str]], deadline: float, p: _Progress) -> int:
    sent = 0
    for k in _chunks(cfg):
        if time.perf_counter() > deadline:
            break
        topic.publish_batch(batch[:k])
        sent += k
        p.update(sent)
    return sent


def _drain_sync(topic: _SyncTopic, cfg: Config, target: int, deadline: float, p: _Progress) -> int:
    done = 0
    for _ in range(2 * (target // cfg.batch) + 10):  # bounded; every pass commits a batch or stops
        if done >= target or time.perf_counter() > deadline:
            break
        msgs = topic.claim(count=cfg.batch, lease=_LEASE)
        if not msgs:
            break
        done += len(topic.commit(msgs))
        p.update(done)
    return done


def _cycle_sync(client: _SyncClient, impl: str, cfg: Config, admin: _Admin, name: str, quiet: bool) -> list[Row]:
    """Publish then drain one fresh topic; returns [publish row, claim+commit row]."""
    topic: _SyncTopic = client.topic(name)
    batch = [cfg.payload()] * cfg.batch
    meter = _Meter(admin)
    try:
        p = _Progress(f'{impl} {PUBLISH}', cfg.messages)
        meter.start()
        sent = _publish_sync(topic, cfg, batch, time.perf_counter() + cfg.time_limit, p)
        pub = meter.stop(PUBLISH, impl, sent, sent < cfg.messages)
        p = _Progress(f'{impl} {CLAIM_COMMIT}', sent)
        meter.start()
        done = _drain_sync(topic, cfg, sent, time.perf_counter() + cfg.time_limit, p)
        cc = meter.stop(CLAIM_COMMIT, impl, done, done < sent, _drain_note(done, sent, admin, name))
        return _report([pub, cc], quiet)
    finally:
        with contextlib.suppress(Exception):  # the sweep below deletes whatever is left anyway
            topic.purge('backlog')
            topic.purge('nextlog')
        admin.sweep(f'rfq:{name}:*')


def _run_sync(impl: str, factory: Callable[[str], _SyncClient], cfg: Config, admin: _Admin, run_id: str) -> list[Row]:
    client = factory(cfg.url)
    try:
        _cycle_sync(client, impl, _warmup_config(cfg), admin, _topic_name(run_id, impl, 'warmup'), quiet=True)
        runs = [
            _cycle_sync(client, impl, cfg, admin, _topic_name(run_id, impl, str(r)), False) for r in range(cfg.repeat)
        ]
    finally:
        client.close()
    return _median_rows(runs)


# --- the asyncio implementations ------------------------------------------------------------------------


@dataclass
class _Shared:
    """State shared by the tasks of one async measurement (one event loop, so no lock is needed)."""

    next_chunk: int = 0
    done: int = 0
    passes: int = 0


async def _publish_async(
    topic: _AsyncTopic, cfg: Config, batch: list[dict[str, str]], deadline: float, p: _Progress
) -> int:
    chunks = _chunks(cfg)
    st = _Shared()

    async def task() -> None:
        while st.next_chunk < len(chunks) and time.perf_counter() <= deadline:
            k = chunks[st.next_chunk]
            st.next_chunk += 1
            await topic.publish_batch(batch[:k])
            st.done += k
            p.update(st.done)

    await asyncio.gather(*(task() for _ in range(cfg.concurrency)))
    return st.done


async def _drain_async(topic: _AsyncTopic, cfg: Config, target: int, deadline: float, p: _Progress) -> int:
    st = _Shared()
    max_passes = 2 * (target // cfg.batch) + 10 * cfg.concurrency

    async def task() -> None:
        # bounded: all tasks together make at most max_passes claims
        while st.done < target and st.passes < max_passes and time.perf_counter() <= deadline:
            st.passes += 1
            msgs = await topic.claim(count=cfg.batch, lease=_LEASE)
            if not msgs:
                return
            committed = await topic.commit(msgs)  # not `st.done += len(await ...)`: that reads st.done first
            st.done += len(committed)
            p.update(st.done)

    await asyncio.gather(*(task() for _ in range(cfg.concurrency)))
    return st.done


async def _cycle_async(
    client: _AsyncClient, impl: str, cfg: Config, admin: _Admin, name: str, quiet: bool
) -> list[Row]:
    topic: _AsyncTopic = client.topic(name)
    batch = [cfg.payload()] * cfg.batch
    meter = _Meter(admin)
    try:
        p = _Progress(f'{impl} {PUBLISH}', cfg.messages)
        meter.start()
        sent = await _publish_async(topic, cfg, batch, time.perf_counter() + cfg.time_limit, p)
        pub = meter.stop(PUBLISH, impl, sent, sent < cfg.messages)
        p = _Progress(f'{impl} {CLAIM_COMMIT}', sent)
        meter.start()
        done = await _drain_async(topic, cfg, sent, time.perf_counter() + cfg.time_limit, p)
        cc = meter.stop(CLAIM_COMMIT, impl, done, done < sent, _drain_note(done, sent, admin, name))
        return _report([pub, cc], quiet)
    finally:
        with contextlib.suppress(Exception):  # the sweep below deletes whatever is left anyway
            await topic.purge('backlog')
            await topic.purge('nextlog')
        admin.sweep(f'rfq:{name}:*')


async def _run_async_main(
    impl: str, factory: Callable[[str], _AsyncClient], cfg: Config, admin: _Admin, run_id: str
) -> list[Row]:
    client = factory(cfg.url)
    try:
        await _cycle_async(client, impl, _warmup_config(cfg), admin, _topic_name(run_id, impl, 'warmup'), True)
        runs = []
        for r in range(cfg.repeat):
            runs.append(await _cycle_async(client, impl, cfg, admin, _topic_name(run_id, impl, str(r)), False))
    finally:
        await client.close()
    return _median_rows(runs)


def _run_async(impl: str, factory: Callable[[str], _AsyncClient], cfg: Config, admin: _Admin, run_id: str) -> list[Row]:
    return asyncio.run(_run_async_main(impl, factory, cfg, admin, run_id))


# --- implementations, runs and ratios -------------------------------------------------------------------


def _native_sync(url: str) -> _SyncClient:
    import ferroq

    return ferroq.Client(url)


def _native_async(url: str) -> _AsyncClient:
    import ferroq

    return ferroq.AsyncClient(url)


def _pure_sync(url: str) -> _SyncClient:
    import ferroq.pure

    client: _SyncClient = ferroq.pure.Client(url)
    return client


def _pure_async(url: str) -> _AsyncClient:
    import ferroq.pure

    client: _AsyncClient = ferroq.pure.AsyncClient(url)
    return client


def _warmup_config(cfg: Config) -> Config:
    """One small publish + drain (loads the scripts, opens the connections) before the timed runs."""
    n = min(cfg.messages, 2 * cfg.batch)
    return Config(**{**asdict(cfg), 'messages': n, 'repeat': 1})


def _topic_name(run_id: str, impl: str, tag: str) -> str:
    return f'ferroq-bench.{run_id}.{impl}.{tag}'


def _median_rows(runs: list[list[Row]]) -> list[Row]:
    """Per operation, the run with the median msgs/s; ``runs`` records every run's msgs/s."""
    out = []
    for i in range(len(runs[0])):
        rows = sorted((r[i] for r in runs), key=lambda row: row.msgs_per_s)
        mid = rows[(len(rows) - 1) // 2]
        mid.runs = [row.msgs_per_s for row in (r[i] for r in runs)]
        mid.partial = any(row.partial for row in rows)
        out.append(mid)
    return out


def run_impl(impl: str, cfg: Config, admin: _Admin, run_id: str) -> list[Row]:
    """Measure one implementation; a failure becomes rows with a note, the run goes on."""
    try:
        if impl == 'native':
            return _run_sync(impl, _native_sync, cfg, admin, run_id)
        if impl == 'pure':
            return _run_sync(impl, _pure_sync, cfg, admin, run_id)
        if impl == 'native-async':
            return _run_async(impl, _native_async, cfg, admin, run_id)
        return _run_async(impl, _pure_async, cfg, admin, run_id)
    except Exception as exc:  # noqa: BLE001 -- report it and go on with the other implementations
        note = f'failed: {type(exc).__name__}: {exc}'
        sys.stderr.write(f'  {impl}: {note}\n')
        return [Row(op, impl, 0, 0.0, 0.0, note=note, partial=True) for op in (PUBLISH, CLAIM_COMMIT)]


def add_ratios(rows: list[Row], ceiling: dict[str, Any]) -> None:
    """Fill ``ratio_pure`` (to the sync pure client, same operation) and ``ratio_ceiling``."""
    pure = {r.operation: r.msgs_per_s for r in rows if r.impl == 'pure' and r.msgs_per_s > 0}
    top = (ceiling.get('pipelined') or {}).get('ops_per_s')
    for r in rows:
        if r.operation in pure and r.msgs_per_s > 0:
            r.ratio_pure = r.msgs_per_s / pure[r.operation]
        if top and r.msgs_per_s > 0:
            r.ratio_ceiling = r.msgs_per_s / float(top)


# --- the server ceiling: redis-benchmark ----------------------------------------------------------------


def _benchmark_target(url: str) -> list[str]:
    """redis-benchmark connection options for a redis:// or unix:// URL."""
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    args: list[str] = []
    if parts.scheme == 'unix':
        args += ['-s', unquote(parts.path)]
        db = (query.get('db') or ['0'])[0]
    elif parts.scheme == 'redis':
        args += ['-h', parts.hostname or '127.0.0.1', '-p', str(parts.port or 6379)]
        db = parts.path.strip('/') or (query.get('db') or ['0'])[0]
    else:
        raise BenchError(f'{parts.scheme}:// URLs are not supported by the ceiling measurement')
    password = parts.password or (query.get('password') or [''])[0]
    if password:
        args += ['-a', unquote(password)]
        if parts.username:
            args += ['--user', unquote(parts.username)]
    if db and db != '0':
        args += ['--dbnum', db]
    return args


def _redact_args(args: list[str]) -> list[str]:
    return ['***' if i > 0 and args[i - 1] == '-a' else a for i, a in enumerate(args)]


def _run_redis_benchmark(exe: str, target: list[str], extra: list[str], timeout: float) -> dict[str, Any]:
    cmd = [exe, *target, '-q', '-t', 'lpush', *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    rates = re.findall(r'([0-9.]+) requests per second', proc.stdout)
    if proc.returncode != 0 or not rates:
        raise BenchError(f'redis-benchmark failed ({proc.returncode}): {(proc.stderr or proc.stdout).strip()[:200]}')
    return {
        'command': ' '.join(['redis-benchmark', *_redact_args(target), '-q', '-t', 'lpush', *extra]),
        'ops_per_s': float(rates[-1]),
    }


def measure_ceiling(cfg: Config, admin: _Admin) -> dict[str, Any]:
    """LPUSH ops/s with 64-deep pipelines (the ceiling) and one request per round trip (latency floor)."""
    exe = shutil.which('redis-benchmark')
    if exe is None:
        return {'available': False, 'reason': 'redis-benchmark not found on PATH (Debian: apt-get install redis-tools)'}
    try:
        target = _benchmark_target(cfg.url)
    except BenchError as exc:
        return {'available': False, 'reason': str(exc)}
    if admin.exists('mylist'):  # `-t lpush` writes the key `mylist`: never touch a user's key of that name
        return {'available': False, 'reason': 'the key mylist exists; redis-benchmark -t lpush would write to it'}
    n_pipe = 100_000 if cfg.quick else min(max(10 * cfg.messages, 200_000), 2_000_000)
    n_rt = 5_000 if cfg.quick else min(max(cfg.messages // 2, 10_000), 100_000)
    out: dict[str, Any] = {'available': True}
    sys.stderr.write('  server ceiling: redis-benchmark -t lpush ...\n')
    # redis-benchmark hangs when it cannot connect, hence the timeout
    runs = (('pipelined', ['-P', '64', '-n', str(n_pipe)]), ('round_trip', ['-P', '1', '-c', '1', '-n', str(n_rt)]))
    try:
        for key, extra in runs:
            out[key] = _run_redis_benchmark(exe, target, extra, cfg.time_limit)
    except (BenchError, subprocess.TimeoutExpired, OSError) as exc:
        out['available'] = 'pipelined' in out
        out['reason'] = str(exc)
    finally:
        admin.delete('mylist')
    return out


# --- rendering: console table, markdown table, README update ---------------------------------------------


def _fmt_ratio(x: float | None) -> str:
    return '' if x is None else f'{x:.2f}×'


def _fmt_pct(x: float | None) -> str:
    return '' if x is None else f'{100 * x:.0f}%'


def _fmt_us(x: float | None) -> str:
    return '' if x is None else f'{x:.1f}'


_HEADERS = ('operation', 'impl', 'msgs/s', 'vs pure', 'vs ceiling', 'client µs/msg', 'server µs/msg')


def _table_rows(data: dict[str, Any]) -> list[list[str]]:
    lines = []
    for r in data['rows']:
        if r.get('note', '').startswith('failed'):
            lines.append([r['operation'], r['impl'], 'failed', '', '', '', ''])
            continue
        rate = f'{r["msgs_per_s"]:,.0f}' + (' (partial)' if r.get('partial') else '')
        lines.append(
            [
                r['operation'],
                r['impl'],
                rate,
                _fmt_ratio(r.get('ratio_pure')),
                _fmt_pct(r.get('ratio_ceiling')),
                _fmt_us(r.get('client_us_per_msg')),
                _fmt_us(r.get('server_us_per_msg')),
            ]
        )
    ceiling = data.get('ceiling') or {}
    for key, label in (('pipelined', 'server ceiling'), ('round_trip', 'round-trip rate')):
        entry = ceiling.get(key)
        if entry:
            impl = entry['command'].split(' -q ')[-1]
            lines.append([label, f'redis-benchmark {impl}', f'{entry["ops_per_s"]:,.0f}', '', '', '', ''])
    if ceiling and not ceiling.get('available', False):
        lines.append(['server ceiling', 'unavailable: ' + str(ceiling.get('reason', '')), '', '', '', '', ''])
    return lines


def _caption(data: dict[str, Any]) -> str:
    m, p = data['machine'], data['params']
    bg = [r['bg_cores'] for r in data['rows'] if r.get('bg_cores') is not None]
    noise = f' Other processes used at most {max(bg):.2f} cores during a measurement.' if bg else ''
    return (
        f'{p["messages"]:,} messages of {p["size"]} bytes per measurement, batches of {p["batch"]}, '
        f'{p["concurrency"]} asyncio tasks for the async clients, median of {p["repeat"]}. '
        f'ferroq {m["ferroq_version"]}, Redis {m["redis_version"]}, Python {m["python_version"]}, '
        f'{m["cpu_count"]} CPUs ({m.get("cpu_model") or m["platform"]}), {data["started_at"][:10]}.{noise}'
    )


def render_table(data: dict[str, Any]) -> str:
    """The README performance table (markdown) from the JSON of ``ferroq bench --json``."""
    right = {'msgs/s', 'vs pure', 'vs ceiling', 'client µs/msg', 'server µs/msg'}
    out = [
        '| ' + ' | '.join(_HEADERS) + ' |',
        '|' + '|'.join('---:' if h in right else '---' for h in _HEADERS) + '|',
    ]
    out += ['| ' + ' | '.join(cells) + ' |' for cells in _table_rows(data)]
    out += ['', _caption(data)]
    return '\n'.join(out) + '\n'


def render_console(data: dict[str, Any]) -> str:
    """The same table, aligned for a terminal."""
    rows = [list(_HEADERS), *_table_rows(data)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_HEADERS))]
    fmt = [(str.ljust if i < 2 else str.rjust) for i in range(len(_HEADERS))]
    lines = ['  '.join(fmt[i](c, widths[i]) for i, c in enumerate(r)).rstrip() for r in rows]
    lines.insert(1, '-' * len(lines[0]))
    return '\n'.join(lines) + '\n\n' + _caption(data) + '\n'


def update_readme(path: str, data: dict[str, Any]) -> None:
    """Replace what is between the perf-table markers of ``path`` with :func:`render_table`."""
    with open(path, encoding='utf-8') as f:
        text = f.read()
    start, end = text.find(README_START), text.find(README_END)
    if start < 0 or end < start:
        raise BenchError(f'{path} has no {README_START} ... {README_END} block')
    head = text[: start + len(README_START)]
    text = f'{head}\n{render_table(data)}{text[end:]}'
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text)


# --- machine info and the command line --------------------------------------------------------------------


def _cpu_model() -> str | None:
    try:
        with open('/proc/cpuinfo', encoding='utf-8') as f:
            for line in f:
                if line.startswith('model name'):
                    return line.split(':', 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def machine_info(admin: _Admin) -> dict[str, Any]:
    import ferroq

    try:
        redis_version = str(admin.info('server').get('redis_version', 'unknown'))
    except _REDIS_ERRORS:
        redis_version = 'unknown'
    return {
        'cpu_count': os.cpu_count(),
        'cpu_model': _cpu_model(),
        'platform': platform.platform(),
        'python_version': platform.python_version(),
        'python_implementation': platform.python_implementation(),
        'redis_version': redis_version,
        'redis_py_version': redis.__version__,
        'ferroq_version': ferroq.__version__,
    }


def _positive_int(value: str) -> int:
    n = int(value)
    if n < 1:
        raise argparse.ArgumentTypeError(f'must be at least 1, got {n}')
    return n


def _impls(value: str) -> list[str]:
    names = [v.strip() for v in value.split(',') if v.strip()]
    bad = [n for n in names if n not in IMPLEMENTATIONS]
    if bad or not names:
        raise argparse.ArgumentTypeError(f'unknown implementation(s) {bad}; choose from {",".join(IMPLEMENTATIONS)}')
    return names


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog='ferroq bench',
        description='Throughput of publish_batch and claim+commit for the native, native async and pure clients, '
        'next to the server ceiling from redis-benchmark, against one Redis server.',
    )
    p.add_argument('--url', help='Redis URL (default: FERROQ_URL, RFQ_REDIS_HOST/PORT, else the embedded server)')
    p.add_argument('--messages', type=_positive_int, default=100_000, help='messages per measurement (100000)')
    p.add_argument('--batch', type=_positive_int, default=1000, help='messages per publish_batch and claim (1000)')
    p.add_argument('--size', type=_positive_int, default=100, help='bytes in the one field "payload" (100)')
    p.add_argument(
        '--impl', type=_impls, default=list(IMPLEMENTATIONS), help=f'comma-separated, from {",".join(IMPLEMENTATIONS)}'
    )
    p.add_argument('--concurrency', type=_positive_int, default=4, help='asyncio tasks for the async clients (4)')
    p.add_argument('--repeat', type=_positive_int, default=1, help='runs per measurement; the median is kept (1)')
    p.add_argument('--time-limit', type=float, default=60.0, help='seconds per measurement before it stops (60)')
    p.add_argument('--quick', action='store_true', help=f'a smoke run: {_QUICK_MESSAGES} messages, short ceiling')
    p.add_argument('--no-ceiling', action='store_true', help='skip redis-benchmark')
    p.add_argument('--json', metavar='PATH', help='write the results as JSON to PATH')
    p.add_argument('--from-json', metavar='PATH', help='do not run: render the results of an earlier --json file')
    p.add_argument('--update-readme', metavar='PATH', help='replace the perf-table block of PATH (README.md)')
    return p


def run(cfg: Config) -> dict[str, Any]:
    """Run the whole benchmark; returns the JSON document."""
    admin = _Admin(cfg.url)
    run_id = f'{os.getpid()}-{secrets.token_hex(3)}'
    try:
        admin.info('server')  # fail early and clearly when the server is not there
    except _REDIS_ERRORS as exc:
        admin.close()
        raise BenchError(f'cannot reach Redis: {exc}') from exc
    try:
        started = datetime.now(timezone.utc).isoformat(timespec='seconds')
        machine = machine_info(admin)
        sys.stderr.write(
            f'ferroq bench: {cfg.messages:,} messages, batch {cfg.batch}, {cfg.size} bytes, '
            f'Redis {machine["redis_version"]}\n'
        )
        rows: list[Row] = []
        for impl in cfg.impls:
            rows += run_impl(impl, cfg, admin, run_id)
        ceiling = measure_ceiling(cfg, admin) if cfg.ceiling else {'available': False, 'reason': 'skipped'}
        add_ratios(rows, ceiling)
        leftover = admin.scan_keys(f'rfq:ferroq-bench.{run_id}.*', limit=1000)
        admin.sweep(f'rfq:ferroq-bench.{run_id}.*')
    finally:
        admin.close()
    rows.sort(key=lambda r: (r.operation != PUBLISH, IMPLEMENTATIONS.index(r.impl)))
    params = {k: v for k, v in asdict(cfg).items() if k != 'url'}
    return {
        'schema': JSON_SCHEMA,
        'started_at': started,
        'url': _redact(cfg.url),
        'machine': machine,
        'params': params,
        'ceiling': ceiling,
        'rows': [asdict(r) for r in rows],
        'leftover_keys': len(leftover),
    }


def _redact(url: str) -> str:
    try:
        from ferroq.server import redact_url

        return redact_url(url)
    except ImportError:  # keep the benchmark usable without the server module
        parts = urlsplit(url)
        return url.replace(f':{parts.password}@', ':***@') if parts.password else url


def _resolve_url(url: str | None) -> str:
    from ferroq.server import resolve_url

    return resolve_url(url)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``ferroq bench``; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        if args.from_json:
            with open(args.from_json, encoding='utf-8') as f:
                data: dict[str, Any] = json.load(f)
        else:
            if args.batch > _MAX_COUNT:
                raise BenchError(f'--batch must be at most {_MAX_COUNT}')
            cfg = Config(
                url=_resolve_url(args.url),
                messages=_QUICK_MESSAGES if args.quick else args.messages,
                batch=min(args.batch, _QUICK_MESSAGES) if args.quick else args.batch,
                size=args.size,
                impls=args.impl,
                concurrency=args.concurrency,
                repeat=args.repeat,
                time_limit=args.time_limit,
                quick=args.quick,
                ceiling=not args.no_ceiling,
            )
            data = run(cfg)
            if args.json:
                with open(args.json, 'w', encoding='utf-8') as f:
                    json.dump(data, f, indent=2)
                    f.write('\n')
        sys.stdout.write(render_console(data))
        if args.update_readme:
            update_readme(args.update_readme, data)
            sys.stderr.write(f'updated the performance table in {args.update_readme}\n')
    except BenchError as exc:
        sys.stderr.write(f'ferroq bench: {exc}\n')
        return 1
    except KeyboardInterrupt:
        sys.stderr.write('ferroq bench: interrupted\n')
        return 130
    noisy = [r for r in data['rows'] if (r.get('bg_cores') or 0) > _NOISY_CORES]
    if noisy:
        worst = max(r['bg_cores'] for r in noisy)
        sys.stderr.write(
            f'ferroq bench: warning: other processes used up to {worst:.2f} cores during {len(noisy)} '
            'measurement(s); the figures are noisy\n'
        )
    if data.get('leftover_keys'):
        sys.stderr.write(f'ferroq bench: warning: {data["leftover_keys"]} benchmark keys were left and deleted\n')
    failed = [r for r in data['rows'] if r['note'].startswith('failed')]
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
