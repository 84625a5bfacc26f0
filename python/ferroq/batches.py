"""A claim+commit loop with the next claim in flight: ``Topic.batches`` of every client.

>>> with topic.batches(count=1000, lease=60) as batches:   # doctest: +SKIP
...     for batch in batches:
...         handle(batch)
...         topic.commit(batch)

Each batch is one ``Topic.claim(count, block, lease, owner)``. When a batch is handed out, the claims of
the next two are already sent, one after the other: the server claims them (and the client reads their
bodies) while the caller handles and commits the current one, so neither side waits for the other. The
iteration ends at the first claim that finds nothing (after waiting up to ``block`` seconds, if given); no
claim is sent after it. A sync client runs the claims ahead in a thread of the iterator's own (the native
client releases the GIL during its I/O); an asyncio client runs them as tasks. Several threads (or tasks)
may share one iterator: each batch goes to one of them, and one claim at a time is in flight.

The batches claimed ahead are leased from the moment they are claimed: their leases run while the current
batch is handled, so choose ``lease`` to cover three batches' handling. ``close()`` (or leaving the
``with`` block) gives them back to the front of the backlog, in claim order, once their claims have
returned (with ``block``, after up to ``block`` seconds each). An iterator dropped without closing leaves
them claimed until their leases end, when a harvest requeues them, as for any claim whose holder went away.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import threading
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ferroq.exceptions import FerroqError

if TYPE_CHECKING:
    from typing_extensions import Self

    from ferroq.types import Message

__all__ = ['AsyncBatches', 'Batches']

#: Messages per batch when ``count`` is not given.
DEFAULT_COUNT = 100
#: Claims in flight or done ahead of the batch being handled.
AHEAD = 2


class _Iteration:
    """What both forms keep: the arguments of every claim (checked before anything is claimed), the claims ahead,
    and a lock that gives one caller at a time the next batch to take and the claims to send after it."""

    _ahead: Any

    def __init__(
        self,
        topic: Any,
        count: int = DEFAULT_COUNT,
        *,
        block: float | None = None,
        lease: float = 30.0,
        owner: str | None = None,
    ) -> None:
        # Imported here: ferroq.pure's clients import this module.
        from ferroq.pure._validation import check_block, check_count, check_lease, check_owner

        check_count(count), check_block(block), check_lease(lease), check_owner(owner)
        self._topic = topic
        self._kwargs: dict[str, Any] = {'count': count, 'block': block, 'lease': lease, 'owner': owner}
        self._closed = False
        self._ahead = collections.deque()  # the claims ahead, oldest first

    def _claim(self) -> Any:
        """One claim of the iteration: its batch (sync) or an awaitable of it (asyncio)."""
        return self._topic.claim(**self._kwargs)

    def __repr__(self) -> str:
        args = ', '.join(f'{k}={v!r}' for k, v in self._kwargs.items())
        return f'{type(self).__name__}({self._topic!r}, {args})'


class Batches(_Iteration):
    """Batches of one topic's messages, claimed two ahead (see :mod:`ferroq.batches`); a context manager."""

    _ahead: collections.deque[concurrent.futures.Future[list[Message]]]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._turn = threading.Lock()
        self._thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix='ferroq-batches')

    def __iter__(self) -> Self:
        return self

    def __next__(self) -> list[Message]:
        with self._turn:
            if self._closed:
                raise StopIteration
            batch: list[Message] = self._ahead.popleft().result() if self._ahead else self._claim()
            if not batch:
                self._close()
                raise StopIteration
            # The thread runs the claims one after the other, in order: it claims the second batch ahead
            # while the caller still handles this one.
            while len(self._ahead) < AHEAD:
                before = self._ahead[-1] if self._ahead else None
                self._ahead.append(self._thread.submit(self._claim_after, before))
            return batch

    def _claim_after(self, before: concurrent.futures.Future[list[Message]] | None) -> list[Message]:
        """The claim after ``before`` (done: the thread ran it first); none once that found nothing or failed."""
        if before is not None and (before.exception() is not None or not before.result()):
            return []
        return self._claim()  # type: ignore[no-any-return]

    def close(self) -> None:
        """Stop claiming and give the batches claimed ahead (if any) back to the front of the backlog."""
        with self._turn:
            self._close()

    def _close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            held: list[Message] = []
            while self._ahead:
                # A claim ahead that failed holds nothing this iterator could give back.
                with contextlib.suppress(FerroqError):
                    held += self._ahead.popleft().result()
            if held:
                self._topic.release(held)  # in claim order, at the front of the backlog
        finally:
            self._thread.shutdown(wait=False)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class AsyncBatches(_Iteration):
    """The asyncio form of :class:`Batches`: ``async for`` and ``async with``; the claims ahead are tasks."""

    _ahead: collections.deque[asyncio.Future[list[Message]]]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._turn = asyncio.Lock()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> list[Message]:
        async with self._turn:
            if self._closed:
                raise StopAsyncIteration
            batch: list[Message] = await (self._ahead.popleft() if self._ahead else self._claim())
            if not batch:
                await self._close()
                raise StopAsyncIteration
            while len(self._ahead) < AHEAD:
                after = self._ahead[-1] if self._ahead else None
                self._ahead.append(asyncio.ensure_future(self._claim_after(after)))
            return batch

    async def _claim_after(self, before: asyncio.Future[list[Message]] | None) -> list[Message]:
        """The claim after ``before``, sent once it returned (claims keep their order); none once that found
        nothing or failed."""
        if before is not None:
            await asyncio.wait([before])
            if before.cancelled() or before.exception() is not None or not before.result():
                return []
        return await self._claim()  # type: ignore[no-any-return]

    async def close(self) -> None:
        """Stop claiming and give the batches claimed ahead (if any) back to the front of the backlog."""
        async with self._turn:
            await self._close()

    async def _close(self) -> None:
        if self._closed:
            return
        self._closed = True
        held: list[Message] = []
        while self._ahead:
            with contextlib.suppress(FerroqError):
                held += await self._ahead.popleft()
        if held:
            await self._topic.release(held)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
