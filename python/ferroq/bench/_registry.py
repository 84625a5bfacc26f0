"""The benchmark matrix: operations × implementations, and the timed loops that drive them.

An implementation registers, per operation it supports, a factory of *sessions*. A session owns one fresh
queue: ``setup(n)`` (untimed) makes ``n`` messages ready for the operation, ``step(k)`` handles up to ``k``
messages and says how many it did, ``close()`` deletes whatever it wrote. The timed loop is shared, so
adding an implementation (the native RSMQ queues, the worker) is one :func:`register` call. An
implementation that runs out of process (rfq in its own venv) overrides :meth:`Impl.measure` instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol, Union

from ferroq.bench._common import Admin, Config, Meter, Progress, Row

__all__ = ['IMPLS', 'OPERATIONS', 'Context', 'Impl', 'Operation', 'open_session', 'register', 'register_operation']


@dataclass(frozen=True)
class Operation:
    """One thing a queue does to a message, measured in messages/s.

    ``ceiling`` names the ``redis-cli --pipe`` stream of the same commands per message (see ``_ceiling``); a
    batch of 1 is compared with the round-trip rate instead, since one message per call waits for its reply.
    """

    name: str
    family: str  # rfq, rsmq, stream, worker: which keys it writes, so which clean-up and prefill it needs
    ceiling: str | None
    doc: str
    # One step handles every message setup made ready (a worker run in burst mode): the timed loop calls it
    # once, from one task, and the step decides its own batching.
    drains: bool = False


class Session(Protocol):
    def setup(self, n: int) -> None: ...
    def step(self, k: int) -> int: ...
    def close(self) -> None: ...


class AsyncSession(Protocol):
    def setup(self, n: int) -> Awaitable[None]: ...
    def step(self, k: int) -> Awaitable[int]: ...
    def close(self) -> Awaitable[None]: ...


@dataclass
class Context:
    """What a session factory gets: the run's parameters, the admin connection, a fresh queue name, the cell."""

    cfg: Config
    admin: Admin
    name: str
    batch: int
    op: str = ''


SyncFactory = Callable[[Context], Session]
AsyncFactory = Callable[[Context], Awaitable[AsyncSession]]
Factory = Union[SyncFactory, AsyncFactory]


@dataclass
class Impl:
    """A client or peer library. ``sessions`` maps an operation name to a session factory."""

    name: str
    pure_python: bool
    doc: str
    sessions: dict[str, Factory] = field(default_factory=dict)
    is_async: bool = False
    batches: dict[str, tuple[int, ...]] = field(default_factory=dict)  # per op; default: every batch size
    caps: dict[str, int] = field(default_factory=dict)  # per op: most messages per measurement (slow peers)
    available: Callable[[Config], str | None] = lambda cfg: None  # why it cannot run here, or None
    out_of_process: bool = False  # measure() runs another interpreter, which times itself; no sessions

    def supports(self, op: str, batch: int) -> bool:
        return op in self.sessions and batch in self.batches.get(op, (batch,))

    def measure(self, ctx: Context, op: str, n: int, progress: Progress) -> Row:
        """One timed run of ``op`` over ``n`` messages in calls of ``ctx.batch``."""
        factory = self.sessions[op]
        ctx.op = op
        if self.is_async:
            return asyncio.run(_measure_async(self, factory, ctx, op, n, progress))  # type: ignore[arg-type]
        return _measure_sync(self, factory, ctx, op, n, progress)  # type: ignore[arg-type]


OPERATIONS: dict[str, Operation] = {}
IMPLS: dict[str, Impl] = {}


def register_operation(op: Operation) -> Operation:
    OPERATIONS[op.name] = op
    return op


def register(impl: Impl) -> Impl:
    IMPLS[impl.name] = impl
    return impl


def _measure_sync(impl: Impl, factory: SyncFactory, ctx: Context, op: str, n: int, progress: Progress) -> Row:
    session = factory(ctx)
    try:
        session.setup(n)
        meter = Meter(ctx.admin)
        deadline = time.perf_counter() + ctx.cfg.time_limit
        meter.start()
        done = 0
        for _ in range(2 * (n // ctx.batch) + 10):  # bounded: every pass handles a batch or stops
            if done >= n or time.perf_counter() > deadline:
                break
            got = session.step(min(ctx.batch, n - done))
            if not got:
                break
            done += got
            progress.update(done)
        sample = meter.stop(done)
    finally:
        session.close()
    return sample.row(op, ctx.batch, impl.name, n)


async def _measure_async(impl: Impl, factory: AsyncFactory, ctx: Context, op: str, n: int, progress: Progress) -> Row:
    session = await factory(ctx)
    try:
        await session.setup(n)
        meter = Meter(ctx.admin)
        deadline = time.perf_counter() + ctx.cfg.time_limit
        state = {'issued': 0, 'done': 0, 'passes': 0}
        max_passes = 2 * (n // ctx.batch) + 10 * ctx.cfg.concurrency

        tasks = 1 if OPERATIONS[op].drains else ctx.cfg.concurrency

        async def task() -> None:
            # bounded: all tasks together make at most max_passes calls
            while state['issued'] < n and state['passes'] < max_passes and time.perf_counter() <= deadline:
                state['passes'] += 1
                k = min(ctx.batch, n - state['issued'])
                state['issued'] += k  # claimed before the await, so the tasks never overshoot n together
                got = await session.step(k)
                state['issued'] -= k - got
                state['done'] += got
                progress.update(state['done'])
                if not got:
                    return

        meter.start()
        await asyncio.gather(*(task() for _ in range(tasks)))
        sample = meter.stop(state['done'])
    finally:
        await session.close()
    return sample.row(op, ctx.batch, impl.name, n)


class _Blocking:
    """An async session driven from synchronous code, on an event loop of its own (for pytest-benchmark)."""

    def __init__(self, session: AsyncSession, loop: asyncio.AbstractEventLoop) -> None:
        self._session, self._loop = session, loop

    def setup(self, n: int) -> None:
        self._loop.run_until_complete(self._session.setup(n))

    def step(self, k: int) -> int:
        return self._loop.run_until_complete(self._session.step(k))

    def close(self) -> None:
        self._loop.run_until_complete(self._session.close())


@contextlib.contextmanager
def open_session(impl: Impl, ctx: Context) -> Iterator[Session]:
    """A session of ``impl`` for ``ctx.op`` with a synchronous interface, closed (its keys deleted) on exit."""
    factory = impl.sessions[ctx.op]
    if not impl.is_async:
        session = factory(ctx)
        try:
            yield session  # type: ignore[misc]
        finally:
            session.close()  # type: ignore[union-attr]
        return
    loop = asyncio.new_event_loop()
    try:
        blocking = _Blocking(loop.run_until_complete(factory(ctx)), loop)  # type: ignore[arg-type]
        try:
            yield blocking
        finally:
            blocking.close()
    finally:
        loop.close()
