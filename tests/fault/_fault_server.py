"""A redis-server with AOF on a free loopback port that a test may kill -9 and start again.

The port and the data directory stay the same across restarts, so clients reconnect to "the same
server" and the append-only file is loaded again. Every wait is bounded.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from _redis import free_port, server_major

START_TIMEOUT = 20.0


def _ping(port: int) -> bytes:
    """The first bytes of the reply to PING ('' if nothing listens)."""
    try:
        with socket.create_connection(('127.0.0.1', port), timeout=0.5) as s:
            s.settimeout(1.0)
            s.sendall(b'PING\r\n')
            return s.recv(64)
    except OSError:
        return b''


class FaultServer:
    """``redis-server --appendonly yes`` in ``directory``; ``kill9`` and ``restart`` keep port and data."""

    def __init__(self, directory: Path, *extra: str, fsync: str = 'everysec') -> None:
        exe = shutil.which('redis-server')
        if exe is None:
            raise RuntimeError('redis-server is not on PATH: run `make setup`')
        self.exe = exe
        self.dir = directory
        self.fsync = fsync
        self.dir.mkdir(parents=True, exist_ok=True)
        self.base = [
            '--bind', '127.0.0.1',
            '--save', '',
            '--appendonly', 'yes',
            '--appendfsync', fsync,
            '--dir', str(directory),
            # Redis 6.2 allows DEBUG always and does not know the option.
            *(['--enable-debug-command', 'local'] if server_major(exe) >= 7 else []),
            *extra,
        ]  # fmt: skip
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        for _ in range(3):  # another process may take the port between free_port() and the bind
            self.port = free_port()
            with contextlib.suppress(RuntimeError):
                self.start()
                return
        raise RuntimeError(f'redis-server did not start; see {directory}')

    @property
    def url(self) -> str:
        return f'redis://127.0.0.1:{self.port}/0'

    def start(self, *extra: str, wait: bool = True) -> None:
        """Start on the same port and data directory; with ``wait``, until it answers PING (loaded)."""
        self.starts += 1
        log = self.dir / f'redis-{self.starts}.log'
        args = [self.exe, '--port', str(self.port), *self.base, '--logfile', str(log), *extra]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        if wait:
            self.wait_ready()

    def wait_ready(self, timeout: float = START_TIMEOUT) -> float:
        """Wait until PING answers PONG (not LOADING); returns when that happened (monotonic)."""
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f'redis-server on port {self.port} exited with {self.proc.returncode}')
            if _ping(self.port).startswith(b'+PONG'):
                return time.monotonic()
            time.sleep(0.01)
        raise RuntimeError(f'redis-server on port {self.port} not ready within {timeout} s')

    def kill9(self) -> None:
        """SIGKILL: no shutdown, no final fsync; what the kernel has of the AOF is all that survives."""
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
