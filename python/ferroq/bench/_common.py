"""What every part of the benchmark shares: the run's parameters, a result row, the meters and the progress bar."""

from __future__ import annotations

import resource
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import redis

from ferroq.bench._proc import machine_busy

__all__ = [
    'BATCHES',
    'BenchError',
    'Config',
    'Meter',
    'Progress',
    'Row',
    'Sample',
    'machine_busy',
    'payload',
]

BATCHES = (1, 100, 1000)
REDIS_ERRORS = (redis.RedisError, OSError)
NOISY_CORES = 0.2  # CPU used by other processes above which a measurement is flagged as noisy
LEASE = 300.0  # long enough that no lease expires during a measurement


class BenchError(Exception):
    """A run that cannot go on (no server, bad arguments, a missing optional dependency)."""


@dataclass
class Config:
    """The parameters of one run (recorded in the JSON output, without the URL)."""

    url: str
    messages: int = 100_000  # per measurement at batch 1000; fewer at smaller batches (see messages_for)
    size: int = 100
    batches: tuple[int, ...] = BATCHES
    impls: tuple[str, ...] = ()  # empty: every registered implementation
    ops: tuple[str, ...] = ()  # empty: every registered operation
    concurrency: int = 4
    repeat: int = 1
    time_limit: float = 60.0
    noise_retries: int = 0  # re-measure a cell while other processes used more than NOISY_CORES
    target_pairs: int = 0  # each target's native and comparator measured again back to back, this many times
    quick: bool = False
    ceiling: bool = True
    latency: bool = True
    scale: bool = True
    rss_messages: int = 1_000_000
    ceiling_messages: int = 200_000
    latency_calls: int = 2_000
    spark_rows: int = 1_000_000  # rows of the Spark section's DataFrame; 0 skips the section
    rfq_python: str | None = None
    run_id: str = ''

    def messages_for(self, batch: int, cap: int | None = None) -> int:
        """Messages in one measurement: fewer for small batches (they are slower), at most ``cap``."""
        n = self.messages if batch >= 1000 else self.messages // 2 if batch >= 100 else self.messages // 20
        n = max(n, batch, 1)
        if cap is not None:
            n = min(n, max(cap // (10 if self.quick else 1), batch))
        return n - n % batch if n >= batch else n


def payload(size: int) -> str:
    """``size`` ASCII bytes: the body of every benchmark message."""
    return ('ferroq' * (size // 6 + 1))[:size]


@dataclass
class Row:
    """One measured (operation, batch, implementation): the median over ``--repeat`` runs."""

    operation: str
    batch: int
    impl: str
    messages: int
    seconds: float
    msgs_per_s: float
    client_us_per_msg: float | None = None
    server_us_per_msg: float | None = None
    bg_cores: float | None = None
    partial: bool = False
    note: str = ''
    pure_python: bool = False
    runs: list[float] = field(default_factory=list)
    ceiling_key: str | None = None
    ratio_ceiling: float | None = None
    ratio_best_pure: float | None = None
    best_pure_impl: str | None = None
    retries: int = 0  # extra runs taken because other processes made the first one noisy

    @property
    def failed(self) -> bool:
        return self.note.startswith(('failed', 'unavailable'))


@dataclass
class Sample:
    """The raw counters of one timed stretch; :meth:`row` turns them into a :class:`Row`."""

    messages: int
    seconds: float
    client_cpu: float
    server_cpu: float | None
    machine_cpu: float | None

    def bg_cores(self) -> float | None:
        """CPU used by everything else on the machine (a build, another job) per second: the noise of a row."""
        if self.machine_cpu is None or self.server_cpu is None or self.seconds <= 0:
            return None
        return max(0.0, (self.machine_cpu - self.client_cpu - self.server_cpu) / self.seconds)

    def row(self, operation: str, batch: int, impl: str, target: int, note: str = '') -> Row:
        n = self.messages
        return Row(
            operation=operation,
            batch=batch,
            impl=impl,
            messages=n,
            seconds=self.seconds,
            msgs_per_s=n / self.seconds if self.seconds > 0 else 0.0,
            client_us_per_msg=per_msg(self.client_cpu, n),
            server_us_per_msg=None if self.server_cpu is None else per_msg(self.server_cpu, n),
            bg_cores=self.bg_cores(),
            partial=n < target,
            note=note or (f'did {n} of {target}' if n < target else ''),
        )


def per_msg(seconds: float, n: int) -> float | None:
    return seconds / n * 1e6 if n else None


def _own_cpu() -> float:
    """CPU seconds of this process (all threads, the tokio ones included) and of its finished children."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


class Admin:
    """A plain redis-py connection for what the clients do not offer: INFO, SCRIPT LOAD, deleting leftovers."""

    def __init__(self, url: str) -> None:
        self.r = redis.Redis.from_url(url, decode_responses=True, socket_timeout=60)

    def info(self, section: str) -> dict[str, Any]:
        reply: dict[str, Any] = self.r.info(section)
        return reply

    def wait_loaded(self, timeout: float, note: Callable[[str], None]) -> None:
        """Waits until the server has loaded its data set (a server that just started with a big AOF answers
        every command but INFO with LOADING until then); raises BenchError after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        told = False
        while str(self.info('persistence').get('loading', 0)) == '1':
            if time.monotonic() > deadline:
                raise BenchError(f'Redis was still loading its data set after {timeout:.0f} s')
            if not told:
                note('waiting for Redis to finish loading its data set')
                told = True
            time.sleep(0.1)

    def server_cpu(self) -> float | None:
        """CPU seconds used by redis-server so far (user + sys)."""
        try:
            info = self.info('cpu')
            return float(info['used_cpu_user']) + float(info['used_cpu_sys'])
        except (*REDIS_ERRORS, KeyError, ValueError):
            return None

    def scan_keys(self, pattern: str, limit: int = 1_000_000) -> list[str]:
        """Keys matching ``pattern`` (SCAN, never KEYS), at most ``limit``."""
        found: list[str] = []
        for key in self.r.scan_iter(match=pattern, count=1000):
            found.append(str(key))
            if len(found) >= limit:
                break
        return found

    def sweep(self, pattern: str) -> int:
        """Delete every key matching ``pattern`` (UNLINK, so big keys go in the background); returns how many.

        One SCAN cursor walks the whole keyspace while its finds are deleted: restarting at cursor 0 after
        each deletion would walk the emptied buckets again and again (quadratic on 10M keys). A key the
        walk may miss (written during it) is caught by the next walk; walks repeat until one finds nothing.
        """
        deleted = 0
        for _ in range(100):  # bounded: a walk finds nothing once the writers of the pattern are gone
            found = 0
            batch: list[Any] = []
            for key in self.r.scan_iter(match=pattern, count=1000):
                batch.append(key)
                if len(batch) == 1000:
                    found += int(self.r.unlink(*batch))
                    batch = []
            if batch:
                found += int(self.r.unlink(*batch))
            deleted += found
            if not found:
                break
        return deleted

    def close(self) -> None:
        self.r.close()


class Meter:
    """Wall clock, this process's CPU and redis-server's CPU around one timed stretch."""

    def __init__(self, admin: Admin) -> None:
        self.admin = admin
        self._wall = 0.0
        self._cpu = 0.0
        self._server: float | None = None
        self._machine: float | None = None

    def start(self) -> None:
        self._server = self.admin.server_cpu()
        self._machine = machine_busy()
        self._cpu = _own_cpu()
        self._wall = time.perf_counter()

    def stop(self, messages: int) -> Sample:
        seconds = time.perf_counter() - self._wall
        cpu = _own_cpu() - self._cpu
        machine_end = machine_busy()
        server_end = self.admin.server_cpu()
        return Sample(
            messages=messages,
            seconds=seconds,
            client_cpu=cpu,
            server_cpu=None if self._server is None or server_end is None else server_end - self._server,
            machine_cpu=None if self._machine is None or machine_end is None else machine_end - self._machine,
        )


class Progress:
    """A progress bar on stderr: the whole run's measurements, and the current one's messages.

    On a terminal the line is redrawn in place; otherwise one line per finished measurement is written.
    """

    WIDTH = 24

    def __init__(self, total: int, quiet: bool = False) -> None:
        self.total = max(total, 1)
        self.done = 0
        self.quiet = quiet
        self.tty = sys.stderr.isatty()
        self._label = ''
        self._target = 0
        self._last = 0.0

    def begin(self, label: str, target: int) -> None:
        self._label, self._target = label, target
        self.update(0, force=True)

    def update(self, n: int, force: bool = False) -> None:
        now = time.perf_counter()
        if self.quiet or not self.tty or (not force and now - self._last < 0.2):
            return
        self._last = now
        frac = (self.done + (n / self._target if self._target else 0.0)) / self.total
        filled = int(self.WIDTH * min(frac, 1.0))
        bar = '#' * filled + '-' * (self.WIDTH - filled)
        sys.stderr.write(f'\r[{bar}] {100 * frac:3.0f}% {self._label}: {n:,}/{self._target:,}\x1b[K')
        sys.stderr.flush()

    def end(self, text: str) -> None:
        self.done += 1
        if self.quiet:
            return
        prefix = '\r\x1b[K' if self.tty else ''
        sys.stderr.write(f'{prefix}  [{self.done}/{self.total}] {self._label}: {text}\n')
        sys.stderr.flush()

    def note(self, text: str) -> None:
        if not self.quiet:
            sys.stderr.write(('\r\x1b[K' if self.tty else '') + text + '\n')
            sys.stderr.flush()
