"""Throwaway redis-server processes on free loopback ports, for the fixtures (and a server that is not Redis).

Never port 6379, never anything but 127.0.0.1; every wait is bounded.
"""

from __future__ import annotations

import contextlib
import os
import platform
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ferroq.exceptions import InvalidArgument

START_TIMEOUT = 10.0
#: Where `make servers` (.ci/servers.py) puts the Redis and Valkey binaries of other versions, one folder each.
SERVERS_DIR = Path(os.environ.get('FERROQ_TEST_SERVERS', Path(__file__).resolve().parents[1] / '.servers'))
#: The password of the ``auth_server`` fixture's redis-server.
PASSWORD = 's3cr3t-Pa55w0rd'


def free_port() -> int:
    """A loopback TCP port nobody listens on right now (the kernel picks it; never 6379)."""
    for _ in range(20):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(('127.0.0.1', 0))
            port = int(s.getsockname()[1])
        if port != 6379:
            return port
    raise RuntimeError('no free loopback port')


def _ping(port: int, password: str | None = None) -> bool:
    try:
        with socket.create_connection(('127.0.0.1', port), timeout=0.5) as s:
            if password is not None:
                s.sendall(f'AUTH {password}\r\n'.encode())
                s.recv(64)
            s.sendall(b'PING\r\n')
            return s.recv(64).startswith(b'+PONG')
    except OSError:
        return False


def server_binary(name: str) -> str:
    """The ``redis-server`` of ``SERVERS_DIR/<name>`` (``redis-5.0``, ``redis-6.2``, ``valkey-8``)."""
    exe = SERVERS_DIR / name / 'redis-server'
    if not exe.exists():
        if platform.system() != 'Linux' or platform.machine() != 'x86_64':
            pytest.skip(f'the {name} server wheel is for x86_64 Linux only')
        raise RuntimeError(f'{exe} is missing: run `make servers`')
    return str(exe)


def server_version(exe: str | None = None) -> str:
    """What ``redis-server --version`` says of itself (the one on PATH by default): ``Redis 7.0.15``."""
    exe = exe or shutil.which('redis-server')
    if exe is None:
        return 'no redis-server on PATH'
    out = subprocess.run([exe, '--version'], capture_output=True, text=True, timeout=30, check=False).stdout
    words = out.split()
    number = next((w[2:] for w in words if w.startswith('v=')), '?')
    return f'{words[0] if words else "?"} {number}'


def server_major(exe: str) -> int:
    """The major version of a redis-server binary (Valkey's own: 8 for Valkey 8)."""
    number = server_version(exe).split()[-1]
    return int(number.split('.')[0]) if number[:1].isdigit() else 0


class RedisServer:
    """A redis-server child process: ``--save ''``, no AOF, data in ``directory``; ``exe`` defaults to
    the ``redis-server`` on PATH (a folder of ``make servers`` first on PATH picks another version)."""

    def __init__(self, directory: Path, *extra: str, password: str | None = None, exe: str | None = None) -> None:
        exe = exe or shutil.which('redis-server')
        if exe is None:
            raise RuntimeError('redis-server is not on PATH: run `make setup` (apt-get install redis-server)')
        directory.mkdir(parents=True, exist_ok=True)
        self.password = password
        last_error = ''
        for _ in range(3):  # another process may grab the port between free_port() and the bind
            self.port = free_port()
            args = [
                exe,
                *self._listen(),
                '--save', '',
                '--appendonly', 'no',
                '--dir', str(directory),
                '--logfile', str(directory / f'redis-{self.port}.log'),
                *extra,
            ]  # fmt: skip
            if password is not None:
                args += ['--requirepass', password]
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
            deadline = time.monotonic() + START_TIMEOUT
            while time.monotonic() < deadline and self.proc.poll() is None:
                if self._ready():
                    return
                time.sleep(0.02)
            last_error = f'redis-server on port {self.port} did not answer PING (exit status {self.proc.poll()})'
            self.stop()
        raise RuntimeError(last_error)

    def _listen(self) -> list[str]:
        """Where the server listens (``self.port`` is the free port picked for this attempt)."""
        return ['--port', str(self.port), '--bind', '127.0.0.1']

    def _ready(self) -> bool:
        return _ping(self.port, self.password)

    @property
    def url(self) -> str:
        return f'redis://127.0.0.1:{self.port}/0'

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(timeout=5)


def commandstats(r: object) -> dict[str, int]:
    """Calls per command since the last ``CONFIG RESETSTAT`` (``evalsha``, ``client|setname``, ...)."""
    info = r.info('commandstats')  # type: ignore[attr-defined]
    return {name.removeprefix('cmdstat_'): int(stat['calls']) for name, stat in info.items()}


#: Commands a client may send while (re)connecting; anything else counts as I/O for an operation.
HANDSHAKE = frozenset(
    {'info', 'config|resetstat', 'ping', 'hello', 'select', 'auth', 'client|setname', 'client|setinfo'}
)


def operation_commands(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """Commands run between two :func:`commandstats` snapshots, minus the connection handshake."""
    return {
        name: calls - before.get(name, 0)
        for name, calls in after.items()
        if calls != before.get(name, 0) and name not in HANDSHAKE
    }


@contextlib.contextmanager
def no_io(r: object) -> Iterator[None]:
    """Asserts that the block ran no command on Redis (and wrote nothing)."""
    size = r.dbsize()  # type: ignore[attr-defined]
    before = commandstats(r)
    yield
    assert operation_commands(before, commandstats(r)) == {}
    assert r.dbsize() == size  # type: ignore[attr-defined]


def assert_refused(r: object, *calls: Callable[[], object]) -> None:
    """Each call raises InvalidArgument, and none of them runs a command on Redis."""
    with no_io(r):
        for call in calls:
            with pytest.raises(InvalidArgument):
                call()


class NotRedisServer:
    """A loopback TCP server that answers every connection with ``reply`` (an HTTP or SSH server's words)."""

    def __init__(self, reply: bytes) -> None:
        self.sock = socket.create_server(('127.0.0.1', 0))
        self.port = self.sock.getsockname()[1]
        self.reply = reply
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f'redis://127.0.0.1:{self.port}/0'

    def close(self) -> None:
        self.sock.close()

    def _serve(self) -> None:
        with contextlib.suppress(OSError):  # the socket is closed at teardown
            while True:
                conn, _ = self.sock.accept()
                with conn:
                    conn.settimeout(10)
                    with contextlib.suppress(OSError):
                        conn.recv(65536)
                        conn.sendall(self.reply)
