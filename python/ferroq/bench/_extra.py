"""Latency percentiles, claim+commit against queue depth, and the memory of publishing from a generator."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any

from ferroq.bench._common import LEASE, Admin, Config, Meter, Progress, Sample, payload
from ferroq.bench._impls import prefill, sweep_topic
from ferroq.bench._registry import Context

if TYPE_CHECKING:
    from ferroq.typing import ClientProtocol, TopicProtocol

__all__ = ['measure_latency', 'measure_rss', 'measure_scale', 'percentile', 'rss_verdict']

_BOUNDED_MIB = 64.0  # RSS growth above this while publishing from a generator means the input is held
ID_BYTES = 89  # a returned 32-character id: a 81-byte str object plus its 8-byte list slot


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) by nearest rank; ``values`` need not be sorted."""
    if not values:
        raise ValueError('no values')
    s = sorted(values)
    rank = max(0, min(len(s) - 1, math.ceil(q * len(s)) - 1))
    return s[rank]


def _client(impl: str, url: str) -> ClientProtocol:
    if impl == 'native':
        import ferroq

        return ferroq.Client(url)
    import ferroq.pure

    return ferroq.pure.Client(url)


def measure_latency(cfg: Config, admin: Admin, impls: list[str], progress: Progress) -> list[dict[str, Any]]:
    """p50/p99 of one publish and of one claim(1)+commit round trip, per client."""
    n = cfg.latency_calls
    out: list[dict[str, Any]] = []
    body = {'payload': payload(cfg.size)}
    for impl in impls:
        name = f'fqb-{cfg.run_id}-lat-{impl}'
        try:
            client = _client(impl, cfg.url)
        except ImportError as exc:
            out.append({'impl': impl, 'reason': f'unavailable: {exc}'})
            continue
        topic = client.topic(name)
        try:
            for op in ('publish', 'claim+commit'):
                progress.begin(f'latency {op} {impl}', n)
                topic.publish(body)
                topic.commit(topic.claim(count=1, lease=LEASE))  # warm: connection and scripts
                if op == 'claim+commit':
                    prefill(Context(cfg, admin, name, 1), 'rfq', n)
                times = []
                for i in range(n):
                    t = time.perf_counter()
                    if op == 'publish':
                        topic.publish(body)
                    else:
                        topic.commit(topic.claim(count=1, lease=LEASE))
                    times.append((time.perf_counter() - t) * 1e6)
                    progress.update(i + 1)
                topic.purge('backlog')
                entry = {
                    'operation': op,
                    'impl': impl,
                    'calls': n,
                    'p50_us': percentile(times, 0.5),
                    'p99_us': percentile(times, 0.99),
                    'max_us': max(times),
                }
                out.append(entry)
                progress.end(f'p50 {entry["p50_us"]:.0f} µs, p99 {entry["p99_us"]:.0f} µs')
        finally:
            client.close()
            admin.sweep(f'rfq:{name}:*')
    return out


def measure_scale(cfg: Config, admin: Admin, impl: str, progress: Progress) -> dict[str, Any]:
    """claim+commit msgs/s (batches of 100) with 1k and with 100k messages queued behind the ones drained.

    Both topics are filled first, then drained in alternating rounds (ABBA order): the machine's speed
    drifts during a run (other tenants, an AOF rewrite, the allocator), and alternating makes a drift
    weigh on both depths alike instead of on whichever was measured second.
    """
    depths = (1_000, 10_000 if cfg.quick else 100_000)
    m, batch, rounds = (2_000, 100, 4) if cfg.quick else (10_000, 100, 10)
    per_round = m // rounds
    out: dict[str, Any] = {'impl': impl, 'batch': batch, 'messages': m, 'rounds': rounds, 'depths': {}}
    names = {depth: f'fqb-{cfg.run_id}-scale{depth}' for depth in depths}
    client = _client(impl, cfg.url)
    try:
        topics = {depth: client.topic(name) for depth, name in names.items()}
        progress.begin(f'scale: fill {depths[0]:,} and {depths[1]:,} queued', len(depths))
        for i, depth in enumerate(depths):
            prefill(Context(cfg, admin, names[depth], batch), 'rfq', depth + m + 2 * batch)
            for _ in range(2):  # warm, untimed: the first calls after a big prefill are slower at any depth
                topics[depth].commit(topics[depth].claim(count=batch, lease=LEASE))
            progress.update(i + 1)
        progress.end('filled')
        progress.begin(f'scale: claim+commit with {depths[0]:,} / {depths[1]:,} queued', 2 * m)
        samples: dict[int, list[Sample]] = {depth: [] for depth in depths}
        for r in range(rounds):
            for depth in depths if r % 2 == 0 else depths[::-1]:
                samples[depth].append(_drain(topics[depth], per_round, batch, admin))
                progress.update(sum(s.messages for v in samples.values() for s in v))
        for depth in depths:
            row = _sum(samples[depth]).row('claim+commit', batch, impl, m)
            out['depths'][str(depth)] = {
                'msgs_per_s': row.msgs_per_s,
                'server_us_per_msg': row.server_us_per_msg,
                'client_us_per_msg': row.client_us_per_msg,
                'bg_cores': row.bg_cores,
                'rounds': [s.messages / s.seconds if s.seconds > 0 else 0.0 for s in samples[depth]],
            }
    finally:
        client.close()
        for name in names.values():
            sweep_topic(cfg.url, admin, name)
    lo, hi = (out['depths'].get(str(d), {}).get('msgs_per_s') for d in depths)
    out['ratio'] = hi / lo if lo and hi else None
    progress.end('' if out['ratio'] is None else f'ratio {out["ratio"]:.2f}')
    return out


def _drain(topic: TopicProtocol, n: int, batch: int, admin: Admin) -> Sample:
    """claim+commit ``n`` messages of ``topic`` in batches, timed."""
    meter = Meter(admin)
    meter.start()
    done = 0
    for _ in range(2 * n // batch + 10):  # bounded
        if done >= n:
            break
        got = topic.commit(topic.claim(count=min(batch, n - done), lease=LEASE))
        if not got:
            break
        done += len(got)
    return meter.stop(done)


def _sum(samples: list[Sample]) -> Sample:
    """One sample for several timed stretches: their messages, seconds and CPU added up."""

    def total(values: list[float | None]) -> float | None:
        return None if any(v is None for v in values) else sum(v for v in values if v is not None)

    return Sample(
        messages=sum(s.messages for s in samples),
        seconds=sum(s.seconds for s in samples),
        client_cpu=sum(s.client_cpu for s in samples),
        server_cpu=total([s.server_cpu for s in samples]),
        machine_cpu=total([s.machine_cpu for s in samples]),
    )


def _rss_kib(pid: int) -> int | None:
    try:
        with open(f'/proc/{pid}/status', encoding='ascii') as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def measure_rss(cfg: Config, admin: Admin, impl: str, n: int, progress: Progress) -> dict[str, Any]:
    """Peak RSS of a process publishing ``n`` messages from a generator in one publish_batch call."""
    name = f'fqb-{cfg.run_id}-rss'
    job = {'url': cfg.url, 'topic': name, 'n': n, 'size': cfg.size, 'impl': impl}
    out: dict[str, Any] = {'impl': impl, 'messages': n}
    progress.begin(f'RSS: publish_stream of a {n:,}-message generator ({impl})', 0)
    proc = subprocess.Popen(
        [sys.executable, '-m', 'ferroq.bench._rss_child', json.dumps(job)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        try:
            assert proc.stdout is not None
            if proc.stdout.readline().strip() != 'ready':
                raise RuntimeError(f'the publisher did not start: {proc.communicate(timeout=30)[1][-300:]}')
            base = peak = _rss_kib(proc.pid) or 0
            deadline = time.monotonic() + max(cfg.time_limit, n / 5_000)  # bounded: at least 5k msgs/s
            while proc.poll() is None and time.monotonic() < deadline:
                peak = max(peak, _rss_kib(proc.pid) or 0)
                time.sleep(0.02)
            if proc.poll() is None:
                proc.kill()
                out['reason'] = 'stopped at the time limit'
            stdout, stderr = proc.communicate(timeout=60)
            if proc.returncode == 0 and stdout.strip():
                result = json.loads(stdout.strip().splitlines()[-1])
                out.update(result)
                out['msgs_per_s'] = result['published'] / result['seconds'] if result['seconds'] else None
            elif 'reason' not in out:
                out['reason'] = f'the publisher failed: {stderr.strip()[-300:]}'
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
        growth = (peak - base) / 1024
        out.update({'base_mib': base / 1024, 'peak_mib': peak / 1024, 'growth_mib': growth})
        out['bytes_per_msg'] = growth * 1024 * 1024 / n if n else None
        out['bounded'] = rss_verdict(growth, out['bytes_per_msg'] or 0.0, n)
        verdict = {True: 'bounded', False: 'grows with the input', None: 'no growth seen at this size'}
        progress.end(
            f'RSS {base / 1024:.0f} → {peak / 1024:.0f} MiB ({out["bytes_per_msg"]:.0f} B/msg): '
            + verdict[out['bounded']]
            + ' (deleting the messages…)'
        )
    finally:
        sweep_topic(cfg.url, admin, name)  # after the report: deleting 10M messages takes a while
    return out


def rss_verdict(growth_mib: float, bytes_per_msg: float, n: int) -> bool | None:
    """True: memory stayed flat; False: it grew with the input; None: too few messages to tell.

    A client that streams its input in chunks grows by a constant (a chunk, the connection buffers), so
    more than 64 MiB is growth whatever the size, and so is 200+ bytes per message once that is over 8 MiB
    (a 100-byte message held as Python and Rust objects costs several hundred bytes).
    """
    if growth_mib > _BOUNDED_MIB or (bytes_per_msg >= 200 and growth_mib > 8):
        return False
    return True if n >= 1_000_000 else None
