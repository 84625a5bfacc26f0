"""A claim+commit loop with the next claim in flight: ``Topic.batches`` of every client.

>>> with topic.batches(count=1000, lease=60) as batches:   # doctest: +SKIP
...     for batch in batches:
...         handle(batch)
...         topic.commit(batch)

Each batch is one ``Topic.claim(count, block, lease, owner)``. When a batch is handed out, the claim of
the next one is already sent: the server claims it (and the client reads its bodies) while the caller
handles and commits the current one, so neither side waits for the other. The iteration ends at the first
claim that finds nothing (after waiting up to ``block`` seconds, if given). The native sync client sends
each claim as a task of its own runtime the moment a batch is handed out, before that batch's messages are
made into Python objects; the caller's next call (its commit) drives the task, which reads the bodies. No
thread is woken and no GIL waited for. The pure sync client runs the claim ahead in a thread of the
iterator's own; an asyncio client runs it as a task. The native asyncio client's claims return their messages
unmade (``_claim_deferred``, a ``DeferredBatch``): a batch is made into Python objects once the next claim is
sent, so the server claims while the event loop makes it (its RSMQ queues' receives the same way). Several threads (or tasks) may share one iterator:
each batch goes to one of them, and one claim at a time is in flight. ``RsmqQueue.batches`` receives
the same way, one ``receive_batch`` ahead (:class:`RsmqBatches`).

The batch claimed ahead is leased from the moment it is claimed: its lease runs while the current batch
is handled, so choose ``lease`` to cover two batches' handling. ``close()`` (or leaving the ``with``
block) gives that batch back to the front of the backlog, once its claim has returned (with ``block``,
after up to ``block`` seconds). An iterator dropped without closing leaves it claimed until its lease
ends, when a harvest requeues it, as for any claim whose holder went away.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, Union, cast

from ferroq.exceptions import FerroqError

if TYPE_CHECKING:
    from typing_extensions import Self

    from ferroq.types import Message

__all__ = ['AsyncBatches', 'AsyncRsmqBatches', 'Batches', 'RsmqBatches']

_T = TypeVar('_T')

#: Messages per batch when ``count`` is not given.
DEFAULT_COUNT = 100


def _claim_arguments(
    count: int = DEFAULT_COUNT, *, block: float | None = None, lease: float = 30.0, owner: str | None = None
) -> dict[str, Any]:
    """``Topic.claim``'s arguments, checked."""
    # Imported here: ferroq.pure's clients import this module.
    from ferroq.pure._validation import check_block, check_count, check_lease, check_owner

    check_count(count), check_block(block), check_lease(lease), check_owner(owner)
    return {'count': count, 'block': block, 'lease': lease, 'owner': owner}


def _receive_arguments(
    count: int = DEFAULT_COUNT, *, vt: float | None = None, block: float | None = None
) -> dict[str, Any]:
    """``RsmqQueue.receive_batch``'s arguments, checked."""
    from ferroq.pure._rsmq import check_call_vt
    from ferroq.pure._validation import check_block, check_count

    check_count(count)
    check_call_vt(vt)
    check_block(block)
    return {'count': count, 'vt': vt, 'block': block}


class _Iteration:
    """What both forms keep: the arguments of every claim (checked before anything is claimed), the claim ahead,
    and a lock that gives one caller at a time the claim ahead to take and the next one to send.

    A topic's batches are its claims (given back by ``release``); the RSMQ forms below receive instead.
    """

    _ahead: Any

    def __init__(self, source: Any, *args: Any, **kwargs: Any) -> None:
        self._topic = source
        self._kwargs: dict[str, Any] = self._arguments(*args, **kwargs)
        self._closed = False
        self._ahead = None

    def _arguments(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return _claim_arguments(*args, **kwargs)

    def _call(self) -> Any:
        """The source's own batch call (a topic's claim): its batch (sync) or an awaitable of it (asyncio)."""
        return self._topic.claim(**self._kwargs)

    def _give_back(self, batch: list[Any]) -> Any:
        """Give a batch claimed ahead back (sync: done; asyncio: an awaitable)."""
        return self._topic.release(batch)

    def __repr__(self) -> str:
        args = ', '.join(f'{k}={v!r}' for k, v in self._kwargs.items())
        return f'{type(self).__name__}({self._topic!r}, {args})'


def _native_ahead(source: Any, kwargs: dict[str, Any]) -> Any:
    """The native calls ahead of a native sync topic (claims) or RSMQ queue (receives), else None."""
    try:
        from ferroq._ferroq import ClaimAhead, ReceiveAhead, RsmqQueue, Topic
    except ImportError:  # a pure-Python install
        return None
    if isinstance(source, Topic):
        return ClaimAhead(source, **kwargs)
    if isinstance(source, RsmqQueue):
        return ReceiveAhead(source, **kwargs)
    return None


class Deferred(Protocol[_T]):
    """A batch before its messages are made into Python objects (a native asyncio client's ``_claim_deferred``
    or ``_receive_batch_deferred``, a ``DeferredBatch``): its length costs nothing, ``messages()`` makes them
    (once)."""

    def __len__(self) -> int: ...
    def messages(self) -> list[_T]: ...


#: What a claim returned: its messages, or a :class:`Deferred` batch of them.
Claimed = Union['list[Message]', 'Deferred[Message]']


def deferred_call(source: Any) -> Callable[..., Awaitable[Deferred[Any]]] | None:
    """The batch call of a native asyncio client or topic (its claim) or RSMQ queue (its receive_batch) that
    defers making its messages, else None.

    Making a batch of 1000 messages takes the event loop's thread about a millisecond; a loop that calls ahead
    sends its next call first (and the server works on it meanwhile), then makes them. The sync clients have
    no need: the native sync ``Batches`` sends the next call from Rust, and a sync client's call runs on
    another thread.
    """
    try:
        from ferroq._ferroq import AsyncClient, AsyncRsmqQueue, AsyncTopic
    except ImportError:  # a pure-Python install
        return None
    if isinstance(source, (AsyncClient, AsyncTopic)):
        return cast('Callable[..., Awaitable[Deferred[Any]]]', source._claim_deferred)
    if isinstance(source, AsyncRsmqQueue):
        return cast('Callable[..., Awaitable[Deferred[Any]]]', source._receive_batch_deferred)
    return None


def made(batch: list[_T] | Deferred[_T]) -> list[_T]:
    """The messages of what a batch call returned (making them, for a deferred batch)."""
    return batch if isinstance(batch, list) else batch.messages()


class Batches(_Iteration):
    """Batches of one topic's messages, claimed one ahead (see :mod:`ferroq.batches`); a context manager."""

    _ahead: concurrent.futures.Future[list[Message]] | None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._turn = threading.Lock()
        # The native client's claims (receives) are tasks of its runtime (ClaimAhead, ReceiveAhead); the pure
        # client's run in a thread.
        self._native = _native_ahead(self._topic, self._kwargs)
        self._thread = (
            None if self._native else concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix='ferroq-batches')
        )

    def __iter__(self) -> Self:
        return self

    def __next__(self) -> list[Message]:
        with self._turn:
            if self._closed:
                raise StopIteration
            batch: list[Message]
            if self._native is not None:
                batch = self._native.next()
            else:
                ahead, self._ahead = self._ahead, None
                batch = ahead.result() if ahead is not None else self._call()
            if not batch:
                self._close()
                raise StopIteration
            if self._thread is not None:
                self._ahead = self._thread.submit(self._call)
            return batch

    def close(self) -> None:
        """Stop claiming and give the batch claimed ahead (if any) back to the front of the backlog."""
        with self._turn:
            self._close()

    def _close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._native is not None:
            batch = self._native.close()  # the claim in flight's messages; none if it failed
            if batch:
                self._give_back(batch)
            return
        ahead, self._ahead = self._ahead, None
        try:
            if ahead is not None:
                # A claim ahead that failed holds nothing this iterator could give back.
                with contextlib.suppress(FerroqError):
                    batch = ahead.result()
                    if batch:
                        self._give_back(batch)
        finally:
            if self._thread is not None:
                self._thread.shutdown(wait=False)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class AsyncBatches(_Iteration):
    """The asyncio form of :class:`Batches`: ``async for`` and ``async with``; the claim ahead is a task."""

    _ahead: asyncio.Future[Claimed] | None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._turn = asyncio.Lock()
        # A native topic's claims (queue's receives) return their messages unmade: each batch is made once the
        # next call is sent.
        self._deferred = deferred_call(self._topic)

    def _claim(self) -> Any:
        """One batch call of the iteration: the source's deferred form when it has one (see :func:`deferred_call`)."""
        if self._deferred is not None:
            return self._deferred(**self._kwargs)
        return self._call()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> list[Message]:
        async with self._turn:
            if self._closed:
                raise StopAsyncIteration
            ahead, self._ahead = self._ahead, None
            batch: Claimed = await (ahead if ahead is not None else self._claim())
            if not batch:
                await self._close()
                raise StopAsyncIteration
            self._ahead = asyncio.ensure_future(self._claim())
            return made(batch)

    async def close(self) -> None:
        """Stop claiming and give the batch claimed ahead (if any) back to the front of the backlog."""
        async with self._turn:
            await self._close()

    async def _close(self) -> None:
        if self._closed:
            return
        self._closed = True
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            with contextlib.suppress(FerroqError):
                batch = made(await ahead)
                if batch:
                    await self._give_back(batch)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


class _Receives:
    """What the RSMQ forms change: their arguments are ``receive_batch``'s, and so is their batch call."""

    _topic: Any
    _kwargs: dict[str, Any]

    def _arguments(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return _receive_arguments(*args, **kwargs)

    def _call(self) -> Any:
        return self._topic.receive_batch(**self._kwargs)


class RsmqBatches(_Receives, Batches):
    """Batches of an RSMQ queue's messages, each a ``receive_batch(count, vt, block)``, received one ahead (as a
    topic's claims: a task of the native runtime, or a thread of the iterator's own for a pure client); a
    context manager.

    The batch received ahead is hidden for ``vt`` from the moment it is received. ``close()`` (or leaving the
    ``with`` block) makes it visible again at once (``change_visibility(id, 0)`` per message, a call each);
    its messages keep the receive counted (RSMQ counts every receive). An iterator dropped without closing
    leaves them hidden until their ``vt`` ends.
    """

    def _give_back(self, batch: list[Any]) -> None:
        for msg in batch:
            self._topic.change_visibility(msg.id, 0)


class AsyncRsmqBatches(_Receives, AsyncBatches):
    """The asyncio form of :class:`RsmqBatches`: the receive ahead is a task."""

    async def _give_back(self, batch: list[Any]) -> None:
        await asyncio.gather(*(self._topic.change_visibility(msg.id, 0) for msg in batch))
