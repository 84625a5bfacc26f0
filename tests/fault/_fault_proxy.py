"""A small asyncio TCP proxy in front of a redis-server that breaks connections on demand.

It listens on a free loopback port and forwards each client connection to the server. ``arm(kind,
pattern)`` makes the next client->server chunk that contains ``pattern`` fail, once per ``times``:

- ``drop-request``: the chunk is not forwarded; both sides are reset (the command never ran);
- ``drop-reply``: the chunk is forwarded, the server's reply is swallowed and both sides are reset
  (the command ran, the client never hears so);
- ``reset``: the chunk is forwarded and both sides are reset at once (the outcome is unknown).

``arm(hold, pattern)`` with a kind of ``HOLDS`` keeps the chunk, and what the client sends after it up to the
end of its transaction (``EXEC``; with ``end=b''`` the chunk alone, for a single command), from the server
until :meth:`FaultProxy.release`:

- ``hold``: the client waits; on release the bytes go on and the replies come back as usual (a slow network);
- ``hold-reset``: the client's side is reset at once (it sees a dropped connection and retries on a new
  one), while the server's side stays open; on release the held bytes reach the server **late**, after the
  retry, and :meth:`FaultProxy.release` returns the server's replies to them.

The proxy runs its own event loop on a daemon thread; every wait on it is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
from dataclasses import dataclass, field

from _redis import free_port

KINDS = ('drop-request', 'drop-reply', 'reset')
HOLDS = ('hold', 'hold-reset')
TIMEOUT = 10.0
#: The last bytes of a transaction: the EXEC command in RESP.
_EXEC = b'*1\r\n$4\r\nEXEC\r\n'
#: Sent after released bytes whose client is gone: its reply marks the end of theirs.
_MARK = b'late-bytes-done'


def _abort(writer: asyncio.StreamWriter) -> None:
    """Close with RST (SO_LINGER 0), as a crashed peer or a middlebox would."""
    sock = writer.get_extra_info('socket')
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
    writer.transport.abort()


@dataclass(eq=False)  # kept in a set, by identity
class _Pair:
    client: asyncio.StreamWriter
    server: asyncio.StreamWriter
    drop_reply: bool = False
    closed: bool = False
    #: Replies to released bytes whose client is gone (``hold-reset``), kept instead of forwarded.
    late: bytearray | None = None
    late_done: asyncio.Event = field(default_factory=asyncio.Event)

    def keep_late(self, data: bytes) -> bool:
        """Whether ``data`` (from the server) answers released bytes whose client is gone: kept, up to the mark's
        reply, instead of forwarded."""
        if self.late is None:
            return False
        self.late += data
        if self.late.endswith(b'%s\r\n' % _MARK):
            del self.late[-len(_MARK) - 2 - len(b'$%d\r\n' % len(_MARK)) :]
            self.late_done.set()
        return True

    def reset(self) -> None:
        if not self.closed:
            self.closed = True
            _abort(self.client)
            _abort(self.server)


@dataclass
class FaultProxy:
    upstream_port: int
    port: int = field(default_factory=free_port)
    applied: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._armed: list[tuple[str, bytes]] = []
        self.held = threading.Event()  # set once a hold has the whole transaction
        self._release: asyncio.Event | None = None
        self._hold_kind = ''
        self._hold_end = _EXEC
        self._late: list[bytes] = []
        self._lock = threading.Lock()
        self._pairs: set[_Pair] = set()
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name='fault-proxy', daemon=True)
        self._thread.start()
        self._server = self._run(asyncio.start_server(self._handle, '127.0.0.1', self.port))

    def _run(self, coro: object) -> object:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(TIMEOUT)  # type: ignore[arg-type]

    @property
    def url(self) -> str:
        return f'redis://127.0.0.1:{self.port}/0'

    def arm(self, kind: str, pattern: bytes, times: int = 1, end: bytes = _EXEC) -> None:
        assert kind in KINDS + HOLDS, kind
        if kind in HOLDS:
            assert times == 1 and self._release is None, 'one hold at a time'
            self._release = self._run(self._event())  # type: ignore[assignment]
            self._hold_kind = kind
            self._hold_end = end
            self.held.clear()
        with self._lock:
            self._armed += [(kind, pattern)] * times

    def pending(self) -> int:
        with self._lock:
            return len(self._armed)

    @staticmethod
    async def _event() -> asyncio.Event:
        return asyncio.Event()  # made on the proxy's loop

    def release(self) -> bytes | None:
        """Let the held bytes go on; for ``hold-reset``, wait until the server answered them and return its
        replies (MULTI's OK, QUEUED per command, then EXEC's reply). Bounded by TIMEOUT."""
        assert self._release is not None and self.held.wait(TIMEOUT), 'nothing was held'
        release, self._release = self._release, None
        self.loop.call_soon_threadsafe(release.set)
        if self._hold_kind == 'hold':
            return None
        pause = threading.Event()
        for _ in range(int(2 * TIMEOUT / 0.01)):
            with self._lock:
                if self._late:
                    return self._late.pop()
            pause.wait(0.01)
        raise AssertionError('the server never answered the released bytes')

    async def _hold(self, pair: _Pair, data: bytes, creader: asyncio.StreamReader, reset: bool) -> None:
        """Keep ``data`` and what follows up to EXEC from the server until release (see the module's doc)."""
        held = bytearray(data)
        while not held.endswith(self._hold_end):
            more = await asyncio.wait_for(creader.read(1 << 16), TIMEOUT)
            if not more:
                return
            held += more
        if reset:
            pair.late = bytearray()
            _abort(pair.client)
        release = self._release
        self.held.set()
        assert release is not None
        await asyncio.wait_for(release.wait(), 3 * TIMEOUT)
        if reset:
            held += b'*2\r\n$4\r\nECHO\r\n$%d\r\n%s\r\n' % (len(_MARK), _MARK)
        pair.server.write(bytes(held))
        await pair.server.drain()
        if reset:
            await asyncio.wait_for(pair.late_done.wait(), TIMEOUT)
            assert pair.late is not None
            with self._lock:
                self._late.append(bytes(pair.late))

    def _take(self, data: bytes) -> str | None:
        with self._lock:
            for i, (kind, pattern) in enumerate(self._armed):
                if pattern in data:
                    del self._armed[i]
                    self.applied.append(kind)
                    return kind
        return None

    async def _handle(self, creader: asyncio.StreamReader, cwriter: asyncio.StreamWriter) -> None:
        try:
            sreader, swriter = await asyncio.wait_for(asyncio.open_connection('127.0.0.1', self.upstream_port), 5)
        except (OSError, asyncio.TimeoutError):
            _abort(cwriter)
            return
        pair = _Pair(cwriter, swriter)
        self._pairs.add(pair)

        async def upstream() -> None:
            while not pair.closed and (data := await creader.read(1 << 16)):
                kind = self._take(data)
                if kind in HOLDS:
                    await self._hold(pair, data, creader, kind == 'hold-reset')
                    if kind == 'hold-reset':
                        return
                    continue
                if kind == 'drop-request':
                    pair.reset()
                    return
                swriter.write(data)
                await swriter.drain()
                if kind == 'reset':
                    pair.reset()
                    return
                if kind == 'drop-reply':
                    pair.drop_reply = True

        async def downstream() -> None:
            while not pair.closed and (data := await sreader.read(1 << 16)):
                if pair.keep_late(data):
                    continue
                if pair.drop_reply:  # the server has answered, so the command ran
                    pair.reset()
                    return
                cwriter.write(data)
                await cwriter.drain()

        try:
            tasks = [asyncio.ensure_future(upstream()), asyncio.ensure_future(downstream())]
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        finally:
            self._pairs.discard(pair)
            if not pair.closed:
                pair.closed = True
                cwriter.close()
                swriter.close()

    def close(self) -> None:
        async def shutdown() -> None:
            self._server.close()  # type: ignore[attr-defined]
            for pair in list(self._pairs):
                pair.reset()

        with contextlib.suppress(Exception):
            self._run(shutdown())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(TIMEOUT)
