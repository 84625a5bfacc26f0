"""Fixtures of the fault suite: restartable AOF redis-servers, the fault proxy, driver processes, the report.

- ``server``: a :class:`FaultServer` (AOF ``everysec``, free loopback port, temp data dir); ``r`` talks to it.
- ``procs``: starts ``fault_driver.py`` processes (producers, consumers, workers) that write their history
  into ``procs.history``; kills, stops and resumes them by pid (``crash_loop``), cuts their connections
  (``client_kills``); kills what is left at teardown. They work on an rfq topic (a name) or a Streams
  consumer group (a ``Target`` with a group).
- ``report(name, counts)``: prints the scenario's one-line summary (``pytest -s``) and repeats every line
  in the terminal summary.

Every scenario runs for a few seconds with small counts; each wait has a timeout.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

sys.path.insert(0, str(Path(__file__).parent))

from _fault_check import Counts, check, drain
from _fault_history import Recorder
from _fault_history import events as history_events
from _fault_proxy import FaultProxy
from _fault_queues import Target
from _fault_server import FaultServer

from _checks import wait_for

DRIVER = Path(__file__).parent / 'fault_driver.py'
_LINES: list[str] = []


def pending(r: redis.Redis, topic: str | Target) -> int:
    """Messages waiting or claimed in the topic (entries pending or undelivered in the group)."""
    return Target.of(topic).waiting(r)


class Procs:
    """Driver processes of one test, and the test's own history (the faults it injects)."""

    def __init__(self, directory: Path) -> None:
        self.history = directory / 'history'
        self.history.mkdir()
        self.stop_file = directory / 'stop'
        self.running: dict[str, subprocess.Popen[bytes]] = {}
        self.killed: set[str] = set()
        self.record = Recorder(self.history, 'test')
        self._logs = directory

    def spawn(
        self, role: str, proc: str, impl: str, url: str, topic: str | Target, **cfg: Any
    ) -> subprocess.Popen[bytes]:
        cfg = {
            'role': role,
            'proc': proc,
            'impl': impl,
            'url': url,
            **Target.of(topic).cfg(),
            'history': str(self.history),
            'stop_file': str(self.stop_file),
            'deadline': 60.0,
            'options': {'connect_timeout': 2.0, 'command_timeout': 5.0},
            **cfg,
        }
        log = open(self._logs / f'{proc}.log', 'wb')  # noqa: SIM115 (the child owns it)
        p = subprocess.Popen([sys.executable, str(DRIVER), json.dumps(cfg)], stdout=log, stderr=subprocess.STDOUT)
        log.close()
        self.running[proc] = p
        return p

    def load(
        self,
        impl: str,
        url: str,
        topic: str | Target,
        producer: dict[str, Any],
        consumer: dict[str, Any],
        consumers: int = 2,
    ) -> tuple[list[str], list[str]]:
        """Two producers and ``consumers`` consumers; returns their names."""
        names = ['p0', 'p1'], [f'c{i}' for i in range(consumers)]
        for name in names[0]:
            self.spawn('producer', name, impl, url, topic, **producer)
        for name in names[1]:
            self.spawn('consumer', name, impl, url, topic, **consumer)
        return names

    def settle(
        self,
        r: redis.Redis,
        url: str,
        topic: str | Target,
        producers: list[str],
        lease: float,
        min_hold: float | None = None,
    ) -> Counts:
        """Producers done, topic emptied by the consumers, everyone stopped, the rest drained: the counts."""
        self.wait(producers, timeout=60)
        wait_for('the consumers to empty the topic', lambda: pending(r, topic) == 0, timeout=30, step=0.1)
        self.finish()
        return self.drained(r, url, topic, lease, min_hold)

    def drained(
        self, r: redis.Redis, url: str, topic: str | Target, lease: float, min_hold: float | None = None
    ) -> Counts:
        """Drain what is left of the topic, then count the history (see _fault_check)."""
        target = Target.of(topic)
        left = drain(url, r, target, self.history, lease)
        return check(self.history, lease, leftover=left, min_hold=min_hold, dead=target.dead_letters(r))

    def events(self, proc: str) -> list[dict[str, Any]]:
        path = self.history / f'{proc}.jsonl'
        return history_events(path) if path.exists() else []

    def log(self, proc: str) -> str:
        path = self._logs / f'{proc}.log'
        return path.read_text(errors='replace')[-3000:] if path.exists() else ''

    def signal(self, proc: str, sig: signal.Signals, kind: str) -> None:
        p = self.running[proc]
        self.record('fault', kind=kind, target=proc)
        with contextlib.suppress(ProcessLookupError):
            os.kill(p.pid, sig)
        if sig == signal.SIGKILL:
            self.killed.add(proc)
            p.wait(timeout=10)

    def kill(self, proc: str) -> None:
        self.signal(proc, signal.SIGKILL, 'kill')

    def crash_loop(
        self, rng: random.Random, live: list[str], start: Callable[[str], object], producers: list[str], min_kills: int
    ) -> int:
        """SIGKILL a random one of ``live`` every 0.4-0.9 s and ``start`` a replacement (a new name), until the
        producers are done and ``min_kills`` kills happened (12 s at most); returns the number of kills."""
        kills = 0
        deadline = time.monotonic() + 12
        while time.monotonic() < deadline and (
            kills < min_kills or any(self.running[p].poll() is None for p in producers)
        ):
            time.sleep(rng.uniform(0.4, 0.9))
            victim = rng.choice(live)
            self.kill(victim)
            kills += 1
            live.remove(victim)
            live.append(f'{victim.split("-")[0]}-{kills}')
            start(live[-1])
        return kills

    def client_kills(self, r: redis.Redis, rng: random.Random, seconds: float = 4.0) -> tuple[int, int]:
        """CLIENT KILL every normal connection but ``r``'s, every 50-200 ms for ``seconds``; returns the rounds
        and the connections they cut."""
        rounds = killed = 0
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            time.sleep(rng.uniform(0.05, 0.2))
            self.record('fault', kind='client-kill')
            killed += int(r.client_kill_filter(_type='normal', skipme=True))
            rounds += 1
        return rounds, killed

    def finish(self, timeout: float = 30.0) -> None:
        """Tell the drivers to end (stop file), then check that they did."""
        self.stop_file.touch()
        self.wait(list(self.running), timeout)

    def wait(self, procs: list[str], timeout: float = 30.0) -> None:
        """Wait for drivers to end on their own; each must exit with 0."""
        for name in procs:
            p = self.running[name]
            try:
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)
                raise AssertionError(f'{name} did not stop within {timeout} s:\n{self.log(name)}') from None
            if p.returncode == -signal.SIGKILL and name in self.killed:
                continue
            assert p.returncode == 0, f'{name} exited with {p.returncode}:\n{self.log(name)}'

    def cleanup(self) -> None:
        for p in self.running.values():
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p.pid, signal.SIGCONT)
                    os.kill(p.pid, signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(timeout=10)
        self.record.close()


@pytest.fixture
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FaultServer]:
    """AOF with ``appendfsync everysec``, or the value given by indirect parametrization."""
    s = FaultServer(tmp_path / 'redis', fsync=getattr(request, 'param', 'everysec'))
    yield s
    s.stop()


@pytest.fixture
def r(server: FaultServer) -> Iterator[redis.Redis]:
    conn = redis.Redis(host='127.0.0.1', port=server.port, decode_responses=True, socket_timeout=10)
    yield conn
    conn.close()


@pytest.fixture
def procs(tmp_path: Path) -> Iterator[Procs]:
    p = Procs(tmp_path)
    yield p
    p.cleanup()


@pytest.fixture
def proxy(server: FaultServer) -> Iterator[FaultProxy]:
    p = FaultProxy(server.port)
    yield p
    p.close()


@pytest.fixture
def report(procs: Procs) -> Callable[..., None]:
    def emit(name: str, counts: Counts, extra: str = '') -> None:
        line = f'{counts.line(name)}{" " + extra if extra else ""}'
        print(line, flush=True)
        _LINES.append(line)

    return emit


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _LINES:
        terminalreporter.section('fault scenarios')
        for line in _LINES:
            terminalreporter.write_line(line)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.fault)
