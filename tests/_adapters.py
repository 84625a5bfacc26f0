"""Run the async clients through a synchronous facade, so every conformance test is written once.

:class:`LoopThread` owns an asyncio event loop on a background thread. :class:`SyncAdapter` wraps an
``AsyncClient`` / ``AsyncTopic``: each method call is made *on the loop thread* (the native async client
needs a running loop when it creates its future) and awaited there, and the test thread waits for the
result. ``topic()``, ``rsmq()``, ``stream()`` and ``group()`` return an adapted object; properties (``url``, ``name``,
``ConsumerGroup.stream``) pass through.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import Any, TypeVar

T = TypeVar('T')

KINDS = ('native', 'native-async', 'pure', 'pure-async')
Client = Any  # ferroq.Client, ferroq.pure.Client, or a SyncAdapter over an async client

#: Methods that make another async object (topic, RSMQ queue, stream, consumer group, a topic's batches): their
#: result is adapted too.
FACTORIES = frozenset({'topic', 'rsmq', 'stream', 'group', 'batches'})

#: Longest wait for one adapted call; tests block for a few seconds at most.
CALL_TIMEOUT = 60.0


class LoopThread:
    """An event loop running forever on a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name='ferroq-test-loop', daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = CALL_TIMEOUT) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Call ``fn`` on the loop thread, await its result if it is awaitable, and return it."""

        async def go() -> Any:
            result = fn(*args, **kwargs)
            if inspect.isawaitable(result):
                result = await result
            return result

        return self.run(go())

    def close(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self.loop.close()


class SyncAdapter:
    """A synchronous view of an async client or topic running on a :class:`LoopThread`."""

    def __init__(self, runner: LoopThread, target: Any) -> None:
        self._runner = runner
        self._target = target

    @property
    def wrapped(self) -> Any:
        return self._target

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if not callable(attr):
            return attr  # a property; ConsumerGroup.stream is one, so factories cannot be methods of this class

        def call(*args: Any, **kwargs: Any) -> Any:
            result = self._runner.call(attr, *args, **kwargs)
            return SyncAdapter(self._runner, result) if name in FACTORIES else result

        call.__name__ = name
        return call

    def __iter__(self) -> SyncAdapter:
        return self

    def __next__(self) -> Any:
        """An async iterator's next item (``Topic.batches``)."""
        try:
            return self._runner.call(self._target.__anext__)
        except StopAsyncIteration:
            raise StopIteration from None

    def __enter__(self) -> SyncAdapter:  # noqa: PYI034
        self._runner.call(self._target.__aenter__)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._runner.call(self._target.__aexit__, exc_type, exc, tb)

    def __repr__(self) -> str:
        return repr(self._target)


def client_class(kind: str) -> Any:
    """The class behind a client kind (imported lazily, so a missing build fails tests, not collection)."""
    if kind.startswith('native'):
        import ferroq

        return ferroq.AsyncClient if kind.endswith('async') else ferroq.Client
    import ferroq.pure

    return ferroq.pure.AsyncClient if kind.endswith('async') else ferroq.pure.Client


def new_client(kind: str, loop: LoopThread, url: str | None, **options: Any) -> Client:
    """A client of ``kind``; an async one is made on the loop thread and wrapped in a :class:`SyncAdapter`."""
    cls = client_class(kind)
    if kind.endswith('async'):
        return SyncAdapter(loop, loop.call(cls, url, **options))
    return cls(url, **options)
