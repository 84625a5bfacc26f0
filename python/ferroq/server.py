"""Where ferroq finds Redis: the URL resolution order and the embedded local redis-server.

Both clients (the native one calls :func:`resolve_url` from Rust) resolve a missing URL in this order:

1. ``FERROQ_URL``;
2. ``RFQ_REDIS_HOST`` / ``RFQ_REDIS_PORT`` (what rfq reads), as ``redis://<host or 127.0.0.1>:<port or 6379>/0``;
3. the embedded server: a ``redis-server`` from ``PATH`` started on demand in the data directory
   (``$FERROQ_HOME``, else ``$XDG_DATA_HOME/ferroq``, else ``~/.local/share/ferroq``), listening only on a
   Unix socket (mode 700) with an append-only file, and shared by every process of the user.

## Behavior

- A lock file (``<data dir>/.lock``, ``fcntl.flock``) serialises starters, so concurrent processes start
  one server. A server that already answers ``PING`` on the socket is reused.
- The server is a daemon: it outlives the process that started it. Stop it with :func:`stop_embedded`
  (``ferroq server stop``), which asks it to ``SHUTDOWN`` so the append-only file is flushed.
- This module talks to the socket with raw RESP (``PING``, ``SHUTDOWN``): it does not need redis-py.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

from ferroq.exceptions import ServerUnavailable

__all__ = ['data_dir', 'embedded_status', 'ensure_embedded', 'redact_url', 'resolve_url', 'stop_embedded']

#: Seconds to wait for the embedded server to answer after starting it (and to stop).
START_TIMEOUT = 10.0

_SOCKET = 'redis.sock'
_PIDFILE = 'redis.pid'
_LOGFILE = 'redis.log'
_LOCKFILE = '.lock'
# sun_path holds 108 bytes on Linux (104 on macOS), the terminating NUL included.
_MAX_SOCKET_PATH = 100
_NOT_FOUND = (
    'redis-server was not found on PATH; install it (Debian/Ubuntu: sudo apt-get install redis-server, '
    'macOS: brew install redis) or set FERROQ_URL=redis://host:port'
)


def _env(name: str) -> str | None:
    """An environment variable, with an empty value counted as unset."""
    return os.environ.get(name) or None


def resolve_url(url: str | None) -> str:
    """The Redis URL to use: ``url`` if given, else ``FERROQ_URL``, ``RFQ_REDIS_HOST``/``PORT``, the embedded server.

    Raises:
        ServerUnavailable: nothing is configured and the embedded redis-server cannot start.
    """
    if url is not None:
        return url
    env_url = _env('FERROQ_URL')
    if env_url:
        return env_url
    host, port = _env('RFQ_REDIS_HOST'), _env('RFQ_REDIS_PORT')
    if host or port:
        host = host or '127.0.0.1'
        if ':' in host and not host.startswith('['):
            host = f'[{host}]'  # an IPv6 literal
        return f'redis://{host}:{port or 6379}/0'
    return ensure_embedded()


def redact_url(url: str) -> str:
    """``url`` with its password replaced by ``***``: safe to print or log.

    ``redis://user:secret@host`` -> ``redis://user:***@host``; a lone user-info part (``redis://secret@host``)
    may be a password and becomes ``***``; so do the values of ``password=`` and ``pass=`` query parameters.
    ``redact_url`` in ``src/config.rs`` is the Rust twin: keep both the same, step by step.
    """
    scheme, sep, rest = url.partition('://')
    if not sep:
        return url
    before_query, has_query, query = rest.partition('?')
    # The user-info ends at the last '@' before the path.
    slash = before_query.find('/')
    authority, path = (before_query, '') if slash < 0 else (before_query[:slash], before_query[slash:])
    userinfo, at, host = authority.rpartition('@')
    if at:
        if ':' in userinfo:
            authority = f'{userinfo.partition(":")[0]}:***@{host}'
        else:
            authority = f'***@{host}' if userinfo else f'@{host}'
    out = f'{scheme}://{authority}{path}'
    if has_query:
        params = []
        for param in query.split('&'):
            key, eq, _ = param.partition('=')
            params.append(f'{key}=***' if eq and key.lower() in ('password', 'pass') else param)
        out += '?' + '&'.join(params)
    return out


def data_dir() -> Path:
    """The embedded server's directory: ``$FERROQ_HOME``, ``$XDG_DATA_HOME/ferroq`` or ``~/.local/share/ferroq``."""
    home = _env('FERROQ_HOME')
    if home:
        return Path(home).expanduser().absolute()
    xdg = _env('XDG_DATA_HOME')
    base = Path(xdg).expanduser() if xdg else Path.home() / '.local' / 'share'
    return (base / 'ferroq').absolute()


def _socket_url(sock: Path) -> str:
    return 'unix://' + quote(str(sock), safe='/')


def _ping(sock: Path, timeout: float = 1.0) -> bool:
    """True when a Redis answers on the Unix socket (a server still loading its data counts as up)."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(str(sock))
            s.sendall(b'PING\r\n')
            reply = s.recv(64)
    except OSError:
        return False
    return reply.startswith((b'+PONG', b'-LOADING'))


def _read_pid(directory: Path) -> int | None:
    try:
        return int((directory / _PIDFILE).read_text().strip())
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    """True while process ``pid`` runs (a zombie, which a container's init may never reap, counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f'/proc/{pid}/stat').read_text()
    except OSError:
        return True
    return stat.rpartition(')')[2].split()[:1] != ['Z']


def _log_tail(directory: Path, lines: int = 5) -> str:
    try:
        tail = (directory / _LOGFILE).read_text(errors='replace').strip().splitlines()[-lines:]
    except OSError:
        return ''
    return (' Last log lines: ' + ' | '.join(tail)) if tail else ''


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """Hold the data directory's lock (one starter or stopper at a time, across processes)."""
    try:
        import fcntl
    except ImportError:  # Windows: no fcntl, and redis-server is not packaged there anyway
        raise ServerUnavailable('the embedded redis-server needs a POSIX system; set FERROQ_URL') from None
    path = directory / _LOCKFILE
    with open(path, 'a+') as f:
        deadline = time.monotonic() + 3 * START_TIMEOUT
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ServerUnavailable(f'timed out waiting for the lock {path}') from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def ensure_embedded() -> str:
    """Start the embedded redis-server unless it already runs; returns its ``unix://`` URL.

    Raises:
        ServerUnavailable: redis-server is not installed or did not answer within 10 s.
    """
    directory = data_dir()
    sock = directory / _SOCKET
    url = _socket_url(sock)
    if _ping(sock):
        return url
    exe = shutil.which('redis-server')
    if exe is None:
        raise ServerUnavailable(_NOT_FOUND)
    if len(str(sock).encode()) > _MAX_SOCKET_PATH:
        raise ServerUnavailable(
            f'the socket path {str(sock)!r} is too long for a Unix socket; set FERROQ_HOME to a shorter directory'
        )
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise ServerUnavailable(f'cannot create the data directory {str(directory)!r}: {exc}') from None
    with _locked(directory):
        if not _ping(sock):  # another process may have started it while we waited for the lock
            _start(exe, directory, sock)
    return url


def _start(exe: str, directory: Path, sock: Path) -> None:
    args = [
        exe,
        '--port', '0',
        '--unixsocket', str(sock),
        '--unixsocketperm', '700',
        '--dir', str(directory),
        '--appendonly', 'yes',
        '--appendfsync', 'everysec',
        '--daemonize', 'yes',
        '--pidfile', str(directory / _PIDFILE),
        '--logfile', str(directory / _LOGFILE),
        '--save', '',
    ]  # fmt: skip
    # stderr goes to a file, not a pipe: a daemon child could hold a pipe open and hang the wait.
    with tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.run(
                args,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                timeout=START_TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ServerUnavailable(f'cannot run {exe}: {exc}') from None
        if proc.returncode != 0:
            err.seek(0)
            detail = err.read().decode(errors='replace').strip()[-500:]
            raise ServerUnavailable(f'redis-server exited with status {proc.returncode}: {detail}')
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if _ping(sock):
            return
        time.sleep(0.02)
    raise ServerUnavailable(
        f'redis-server did not answer on {str(sock)!r} within {START_TIMEOUT:g} s.{_log_tail(directory)}'
    )


def embedded_status() -> dict[str, object]:
    """What is known about the embedded server: running, url, data_dir, socket, pid, log, redis_server."""
    directory = data_dir()
    sock = directory / _SOCKET
    running = _ping(sock)
    return {
        'running': running,
        'url': _socket_url(sock),
        'data_dir': str(directory),
        'socket': str(sock),
        'pid': _read_pid(directory) if running else None,
        'log': str(directory / _LOGFILE),
        'redis_server': shutil.which('redis-server'),
    }


def stop_embedded() -> bool:
    """Shut the embedded server down (flushing its append-only file); False if it was not running.

    Raises:
        ServerUnavailable: it did not stop within 10 s, even after SIGTERM.
    """
    directory = data_dir()
    sock = directory / _SOCKET
    if not _ping(sock):
        return False
    with _locked(directory):
        if not _ping(sock):
            return False
        pid = _read_pid(directory)
        with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(START_TIMEOUT)
            s.connect(str(sock))
            s.sendall(b'SHUTDOWN\r\n')
            s.recv(256)  # the server closes the connection when it goes away; an error reply if it refused
        if _wait_stopped(sock, pid):
            return True
        if pid is not None and _alive(pid):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
            if _wait_stopped(sock, pid):
                return True
    raise ServerUnavailable(f'the embedded redis-server (pid {pid}) did not stop; see {directory / _LOGFILE}')


def _wait_stopped(sock: Path, pid: int | None) -> bool:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if not _ping(sock, timeout=0.2) and (pid is None or not _alive(pid)):
            return True
        time.sleep(0.02)
    return False
