"""A small asyncio TCP proxy in front of a redis-server that breaks connections on demand.

It listens on a free loopback port and forwards each client connection to the server. ``arm(kind,
pattern)`` makes the next client->server chunk that contains ``pattern`` fail, once per ``times``:

- ``drop-request``: the chunk is not forwarded; both sides are reset (the command never ran);
- ``drop-reply``: the chunk is forwarded, the server's reply is swallowed and both sides are reset
  (the command ran, the client never hears so);
- ``reset``: the chunk is forwarded and both sides are reset at once (the outcome is unknown).

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
TIMEOUT = 10.0


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

    def arm(self, kind: str, pattern: bytes, times: int = 1) -> None:
        assert kind in KINDS, kind
        with self._lock:
            self._armed += [(kind, pattern)] * times

    def pending(self) -> int:
        with self._lock:
            return len(self._armed)

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
