"""Workers: run a handler for every message of one or more rfq topics, the way production consumers need it.

>>> import ferroq
>>> def handle(msg: ferroq.Message) -> None:
...     print(msg.fields)                                  # raise to fail: the message is retried later
>>> ferroq.Worker(ferroq.Client(), ['urgent', 'jobs'], handle, concurrency=8).run()  # doctest: +SKIP

What a worker does:

- claims in batches of up to half the ``prefetch`` (``prefetch`` messages held at most, not counting
  finished ones being committed), topics in priority order (the first first); the next claim is in flight
  while handlers run (two, while messages held plus those being claimed stay within half the prefetch);
- runs the handler once per message, ``concurrency`` at a time, in lanes that each run message after
  message: on threads for a plain function, as asyncio tasks for an ``async def`` handler;
- renews the leases of everything it holds every third of ``lease``, so a slow handler keeps its message;
- commits (fenced) when the handler returns, in batches (half the prefetch, or what finished within 20 ms);
- when the handler raises: releases the message with a delay of ``retry_delay * retry_backoff **
  (deliveries - 1)`` seconds (at most ``max_retry_delay``), a delayed requeue kept in Redis, not a sleep here;
  once it has been delivered ``max_deliveries`` times, moves it atomically to the dead-letter topic
  (``<topic>.dead`` by default) with the error recorded (``inspect()`` shows it as ``error``);
- with a ``name``, owns a processing list: its claims are recorded under that name, and at start it
  resumes the claims a previous run under the same name left unfinished, before taking new work;
- runs a harvester in the background, which requeues the claims of dead workers once their leases expire
  (so a retired worker's processing list is taken over);
- stops gracefully on ``stop()`` or, when run in the main thread, on SIGINT/SIGTERM: it stops claiming,
  finishes and commits what is running, releases what was prefetched but not started, and returns. A
  second signal has the default effect (the process ends; its leases expire and the harvester requeues).

:class:`Worker` blocks in :meth:`Worker.run`; :class:`AsyncWorker` is awaited. Both take any client:
``ferroq.Client``, ``ferroq.AsyncClient``, ``ferroq.pure.Client`` or ``ferroq.pure.AsyncClient``.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import inspect
import logging
import math
import signal
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar, Union, cast

from ferroq._limits import MAX_CONCURRENCY, MAX_ERROR_CHARS, MAX_PREFETCH, MAX_SECONDS, MIN_LEASE
from ferroq.batches import Claimed, deferred_call, made
from ferroq.exceptions import FerroqError, InvalidArgument
from ferroq.types import Message
from ferroq.typing import AnyClient, AsyncClientProtocol, ClientProtocol

__all__ = ['AsyncWorker', 'Handler', 'Worker', 'WorkerStats']

log = logging.getLogger('ferroq.worker')
T = TypeVar('T')
# Finished messages whose outcome is not recorded yet: those that succeeded, those that failed with their error.
_Outcomes = tuple[list[Message], list[tuple[Message, BaseException]]]

#: A handler takes one message; it may be a plain function or an ``async def``. Its return value is ignored.
Handler = Callable[[Message], Union[Awaitable[Any], Any]]

#: Finished messages wait at most this long before their batch is committed.
COMMIT_LINGER = 0.02
#: An ``async def`` handler's lane lets the loop run at least this often, even if its handlers never wait.
LANE_TURN = 0.005


@dataclass
class WorkerStats:
    """What a worker did, returned by ``run()``.

    Attributes:
        committed: messages whose handler returned and whose commit was accepted.
        retried: failures released for a delayed retry.
        dead: messages moved to a dead-letter topic.
        lost: messages whose claim was lost before the outcome was recorded (lease expired and taken over);
            another delivery handles them.
        released: prefetched messages given back unstarted at shutdown.
    """

    committed: int = 0
    retried: int = 0
    dead: int = 0
    lost: int = 0
    released: int = 0


def _number(value: object, name: str, low: float, high: float, low_open: bool = False) -> float:
    ok = not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
    if ok:
        ok = (low < value if low_open else low <= value) and value <= high  # type: ignore[operator]
    if not ok:
        bound = f'> {low:g}' if low_open else f'>= {low:g}'
        raise InvalidArgument(f'{name} must be a number {bound} and <= {high:g}, got {value!r}')
    return float(value)  # type: ignore[arg-type]


def _int(value: object, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidArgument(f'{name} must be an int from {low} to {high}, got {value!r}')
    return value


def _client_kind(client: object) -> bool:
    """True for an asyncio client, False for a synchronous one; InvalidArgument for anything else."""
    if isinstance(client, AsyncClientProtocol):
        return True
    if isinstance(client, ClientProtocol):
        return False
    raise InvalidArgument(
        'client must be a ferroq.Client, ferroq.AsyncClient, ferroq.pure.Client or ferroq.pure.AsyncClient, '
        f'got {type(client).__name__}'
    )


def _is_async_handler(handler: Callable[..., Any]) -> bool:
    call = getattr(handler, '__call__', None)  # noqa: B004 - an object with an async __call__ counts
    return inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(call)


def error_text(exc: BaseException) -> str:
    """What is recorded for a failure: ``Type: message``, at most MAX_ERROR_CHARS characters."""
    detail = str(exc)
    text = f'{type(exc).__name__}: {detail}' if detail else type(exc).__name__
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 3] + '...'


class _Exhausted(Exception):
    """A message claimed more than max_deliveries times without an outcome (its workers kept dying)."""


def _key(msg: Message) -> tuple[str, str]:
    return msg.topic, msg.id


class _Engine:
    """The worker loop, on asyncio. Client calls of a synchronous client run on a small thread pool.

    Handlers run in ``concurrency`` lanes. A lane takes the next ready message, runs the handler, records the
    outcome and takes the next one, until nothing is ready or the worker stops: a plain handler's lane is one
    job on the handler thread pool, an ``async def`` handler's lane one task. So a message costs no executor
    job, future or task of its own, and the loop is woken per batch of outcomes, not per message.
    """

    def __init__(
        self,
        client: AnyClient,
        topics: str | Sequence[str],
        handler: Handler,
        *,
        concurrency: int,
        prefetch: int | None,
        lease: float,
        max_deliveries: int,
        retry_delay: float,
        retry_backoff: float,
        max_retry_delay: float,
        dead_letter: str | None,
        name: str | None,
        poll: float,
        harvest_interval: float | None,
        burst: bool,
        handle_signals: bool,
    ) -> None:
        # Every setting is checked here, before anything talks to Redis.
        self._async_client = _client_kind(client)
        self._claim_deferred = deferred_call(client)
        names = [topics] if isinstance(topics, str) else topics
        if not isinstance(names, (list, tuple)) or not names or not all(isinstance(t, str) for t in names):
            raise InvalidArgument(f'topics must be a topic name or a non-empty list of them, got {topics!r}')
        if len(set(names)) != len(names):
            raise InvalidArgument(f'topics must not repeat a name, got {list(names)!r}')
        if not callable(handler):
            raise InvalidArgument(f'handler must be callable, got {type(handler).__name__}')
        self.concurrency = _int(concurrency, 'concurrency', 1, MAX_CONCURRENCY)
        default_prefetch = min(max(2 * self.concurrency, 10), MAX_PREFETCH)
        self.prefetch = _int(default_prefetch if prefetch is None else prefetch, 'prefetch', 1, MAX_PREFETCH)
        if self.prefetch < self.concurrency:
            raise InvalidArgument(f'prefetch ({self.prefetch}) must be at least concurrency ({self.concurrency})')
        self.lease = _number(lease, 'lease', MIN_LEASE, MAX_SECONDS)
        self.max_deliveries = _int(max_deliveries, 'max_deliveries', 1, 1_000_000)
        self.retry_delay = _number(retry_delay, 'retry_delay', 0, MAX_SECONDS)
        self.retry_backoff = _number(retry_backoff, 'retry_backoff', 1, 1000)
        self.max_retry_delay = _number(max_retry_delay, 'max_retry_delay', 0, MAX_SECONDS)
        self.poll = _number(poll, 'poll', 0, MAX_SECONDS, low_open=True)
        self.harvest_interval = (
            None if harvest_interval is None else _number(harvest_interval, 'harvest_interval', 0, MAX_SECONDS, True)
        )
        if not isinstance(burst, bool) or not isinstance(handle_signals, bool):
            raise InvalidArgument('burst and handle_signals must be bools')
        if name is not None and (not isinstance(name, str) or not name or len(name) > 128 or name.split() != [name]):
            raise InvalidArgument(
                f'name must be a non-empty str of at most 128 characters without whitespace, got {name!r}'
            )
        self.name = name
        self.burst = burst
        self.handle_signals = handle_signals
        self.client = client
        self.handler = handler
        self._async_handler = _is_async_handler(handler)
        self.topics = {t: client.topic(t) for t in names}  # InvalidName for a bad name
        self.dead_topics = {}
        for t in names:
            dead = dead_letter if dead_letter is not None else f'{t}.dead'
            client.topic(dead)  # InvalidName for a bad (or too long) dead-letter topic name
            if dead in self.topics:
                raise InvalidArgument(f'the dead-letter topic {dead!r} is also a topic this worker consumes')
            self.dead_topics[t] = dead
        self.stats = WorkerStats()
        self._stopping = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._done_event: asyncio.Event | None = None

    # --- state -------------------------------------------------------------------------------------

    def _reset(self) -> None:
        # Lanes on handler threads change _ready, _running, _done and _failed: every change of them holds _lock
        # (async lanes run on the loop, as does all else that changes them, and take no lock; see _finish).
        self._lock = threading.Lock()
        self._ready: collections.deque[Message] = collections.deque()  # claimed, not started
        self._running: list[Message | None] = [None] * self.concurrency  # each lane's current message
        self._free = list(range(self.concurrency))  # lanes not started
        # Finished, outcome not yet recorded: those that succeeded, and those that failed with their error. Two
        # lists, so a message that succeeds costs no tuple (and the collector has half the objects to track).
        self._done: list[Message] = []
        self._failed: list[tuple[Message, BaseException]] = []
        self._first_done = 0.0  # when _done or _failed got the first entry
        self._flush_at = max(1, self.prefetch // 2)  # outcomes that are recorded without waiting longer
        self._flushing: asyncio.Future[None] | None = None  # the outcomes being recorded
        # The claim in flight, if any: it asks for half the prefetch (see _main) and returns what it got.
        self._claiming: asyncio.Future[Claimed] | None = None
        # Whether the topics may be drained: the last claim to end got fewer messages than it asked for. A
        # burst worker then looks (topic stats) before it waits in a blocking claim; its first claim does
        # not block, so empty topics end a burst at once too.
        self._maybe_drained = False
        self._failure: BaseException | None = None  # a lane ended with an error of the worker itself
        assert self._loop is not None and self._wake is not None
        # Wakes the loop: a plain handler's lane runs on another thread.
        self._notify: Callable[[], object] = (
            self._wake.set
            if self._async_handler
            else functools.partial(self._loop.call_soon_threadsafe, self._wake.set)
        )
        self._io = None if self._async_client else ThreadPoolExecutor(4, thread_name_prefix='ferroq-worker-io')
        self._threads = (
            None
            if self._async_handler
            else ThreadPoolExecutor(self.concurrency, thread_name_prefix='ferroq-worker-handler')
        )

    def _held(self) -> list[Message]:
        with self._lock:
            running = (m for m in self._running if m is not None)
            return [*self._ready, *running, *self._done, *(m for m, _ in self._failed)]

    def _held_count(self) -> int:
        with self._lock:
            return len(self._ready) + self.concurrency - self._running.count(None) + self._finished()

    def _finished(self) -> int:
        """Finished messages whose outcome is not recorded yet."""
        return len(self._done) + len(self._failed)

    def stop(self) -> None:
        """Stop claiming and shut down gracefully; safe from any thread and from signal handlers."""
        self._stopping = True
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(wake.set)
            except RuntimeError:  # the loop closed meanwhile: nothing to wake
                pass

    async def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if self._async_client:
            return await fn(*args, **kwargs)
        assert self._loop is not None
        return await self._loop.run_in_executor(self._io, functools.partial(fn, *args, **kwargs))

    # --- running handlers --------------------------------------------------------------------------

    def _start(self) -> None:
        """Start a lane for each ready message, up to ``concurrency`` lanes; it goes on with the next ones."""
        loop = self._loop
        assert loop is not None
        while self._free and not self._stopping:
            with self._lock:
                if not self._ready:
                    return
                slot = self._free.pop()
                msg = self._running[slot] = self._ready.popleft()
            if self._async_handler:
                lane: asyncio.Future[None] = loop.create_task(self._async_lane(slot, msg))
            else:
                lane = loop.run_in_executor(self._threads, self._lane, slot, msg)
            lane.add_done_callback(functools.partial(self._lane_ended, slot))

    def _lane(self, slot: int, msg: Message | None) -> None:
        """A plain handler's lane, on a handler thread."""
        handler, lock = self.handler, self._lock
        while msg is not None:
            outcome: BaseException | None = None
            try:
                result = handler(msg)
                if result is not None and inspect.isawaitable(result):  # a plain function returned a coroutine
                    asyncio.run(_awaited(result))
            except BaseException as exc:  # noqa: BLE001 - whatever the handler raises fails the message
                outcome = exc
            with lock:
                msg = self._finish(slot, msg, outcome)

    async def _async_lane(self, slot: int, msg: Message | None) -> None:
        """An ``async def`` handler's lane, a task on the loop."""
        handler = self.handler
        turn_ends = time.monotonic() + LANE_TURN
        while msg is not None:
            try:
                await handler(msg)
            except asyncio.CancelledError:
                self._finish(slot, msg, asyncio.CancelledError('handler cancelled'), last=True)
                return  # the lane itself may be what was cancelled: a new one takes over if needed
            except Exception as exc:  # noqa: BLE001 - whatever the handler raises fails the message
                msg = self._finish(slot, msg, exc)
            else:
                msg = self._finish(slot, msg, None)
            if msg is not None and time.monotonic() >= turn_ends:
                await asyncio.sleep(0)  # handlers that never wait must not hold up renewals and commits
                turn_ends = time.monotonic() + LANE_TURN

    def _finish(self, slot: int, msg: Message, exc: BaseException | None, last: bool = False) -> Message | None:
        """Record a lane's outcome and take its next message (None: the lane ends).

        A plain handler's lane calls it holding ``_lock``. An async lane calls it without: with an ``async def``
        handler, everything that changes this state runs on the loop, and a lock taken per message would cost
        as much as the rest of this bookkeeping.
        """
        if exc is None:
            self._done.append(msg)
        else:
            self._failed.append((msg, exc))
        count = len(self._done) + len(self._failed)
        if count == 1:
            self._first_done = time.monotonic()
        if last or self._stopping or not self._ready:
            after = self._running[slot] = None
        else:
            after = self._running[slot] = self._ready.popleft()
        # The loop looks again when the first outcome waits (to commit it within COMMIT_LINGER) and when
        # there are enough for a batch; in between, it sleeps.
        if count == 1 or count == self._flush_at:
            self._notify()
        return after

    def _lane_ended(self, slot: int, lane: asyncio.Future[None]) -> None:
        with self._lock:
            self._running[slot] = None  # set only if the lane failed: that message's outcome is unknown
        self._free.append(slot)
        if not lane.cancelled() and lane.exception() is not None and self._failure is None:
            self._failure = lane.exception()
        assert self._wake is not None
        self._wake.set()

    # --- recording outcomes ------------------------------------------------------------------------

    def backoff(self, deliveries: int) -> float:
        """Seconds before a retry of a message whose ``deliveries``-th delivery failed."""
        exponent = min(max(deliveries - 1, 0), 1000)
        try:
            delay = self.retry_delay * self.retry_backoff**exponent
        except OverflowError:
            delay = math.inf
        return min(delay, self.max_retry_delay)

    def _flush_due(self) -> bool:
        """Whether the finished messages are to be recorded now (one batch at a time)."""
        finished = self._finished()
        if not finished or self._flushing is not None:
            return False
        idle = len(self._free) == self.concurrency and not self._ready  # nothing runs, nothing is about to
        return idle or finished >= self._flush_at or time.monotonic() - self._first_done >= COMMIT_LINGER

    def _in_background(self, call: Awaitable[T]) -> asyncio.Future[T]:
        """Run a claim or a flush as a task (or a native call's future) that wakes the loop when it ends: the loop
        goes on meanwhile."""
        assert self._loop is not None and self._wake is not None
        task = asyncio.ensure_future(call, loop=self._loop)
        task.add_done_callback(lambda _: self._wake.set())  # type: ignore[union-attr]
        return task

    def _take_done(self) -> _Outcomes:
        """The finished messages (those that succeeded, those that failed), taken to be recorded."""
        with self._lock:
            done, self._done = self._done, []
            failed, self._failed = self._failed, []
        return done, failed

    async def _flushed(self) -> None:
        """Wait for the outcomes being recorded; raises what recording them raised."""
        flushing = self._flushing
        if flushing is not None:
            try:
                await asyncio.shield(flushing)  # a cancelled run() still lets it finish (see run())
            finally:
                if flushing.done():
                    self._flushing = None

    async def _flush(self, finished: _Outcomes) -> None:
        """Commit what succeeded, release failures for a retry, dead-letter exhausted ones."""
        ok, failed = finished
        if ok:
            committed = await self._call(self.client.commit, ok)
            self.stats.committed += len(committed)
            if len(committed) < len(ok):
                self.stats.lost += len(ok) - len(committed)
                log.warning('%d of %d commits were refused: their claims were lost', len(ok) - len(committed), len(ok))
        retries: dict[float, list[Message]] = {}
        for msg, exc in failed:
            if isinstance(exc, _Exhausted) or msg.deliveries >= self.max_deliveries:
                await self._dead_letter(msg, exc)
                continue
            delay = self.backoff(msg.deliveries)
            log.warning(
                'message %s of %r failed (delivery %d of %d), retry in %.3g s: %s',
                msg.id, msg.topic, msg.deliveries, self.max_deliveries, delay, error_text(exc),
            )  # fmt: skip
            retries.setdefault(delay, []).append(msg)
        for delay, msgs in retries.items():
            released = await self._call(self.client.release, msgs, delay=delay)
            self.stats.retried += len(released)
            self.stats.lost += len(msgs) - len(released)

    async def _dead_letter(self, msg: Message, exc: BaseException) -> None:
        text = error_text(exc)
        dead = self.dead_topics[msg.topic]
        moved = await self._call(self.topics[msg.topic].dead_letter, [msg], error=text, to=dead)
        if moved:
            self.stats.dead += 1
            log.error(
                'message %s of %r moved to %r after %d deliveries: %s', msg.id, msg.topic, dead, msg.deliveries, text
            )
        else:
            self.stats.lost += 1

    # --- claiming ----------------------------------------------------------------------------------

    def _claim(self, count: int, block: float | None) -> Awaitable[Claimed]:
        """One claim's messages, or the native asyncio client's batch of them not yet made into Python objects,
        sent now (a native call's future): the loop sends its next claim before it makes them (see _main)."""
        kwargs = {'count': count, 'block': block, 'lease': self.lease, 'owner': self.name}
        if self._claim_deferred is not None:
            return self._claim_deferred(list(self.topics), **kwargs)
        return cast('Awaitable[Claimed]', self._call(self.client.claim, list(self.topics), **kwargs))

    def _accept(self, msgs: list[Message]) -> None:
        with self._lock:
            for msg in msgs:
                if msg.deliveries > self.max_deliveries:
                    # Claimed again and again without an outcome (its workers died): do not run it once more.
                    if not self._finished():
                        self._first_done = time.monotonic()
                    error = _Exhausted(
                        f'no outcome after {msg.deliveries - 1} deliveries (max_deliveries={self.max_deliveries})'
                    )
                    self._failed.append((msg, error))
                else:
                    self._ready.append(msg)

    async def _drained(self) -> bool:
        """Burst mode: nothing waiting, claimed (by anyone) or delayed on any topic, and nothing held here."""
        await self._flushed()
        if self._held_count():
            return False
        for topic in self.topics.values():
            s = await self._call(topic.stats)
            if s.backlog or s.nextlog or s.delayed:
                return False
        return True

    # --- background tasks --------------------------------------------------------------------------

    async def _renew_loop(self) -> None:
        """Every third of the lease, extend every held message; a claim found lost is not started."""
        while not await self._quiet(self.lease / 3):
            held = self._held()
            if not held:
                continue
            try:
                renewed = set(await self._call(self.client.extend, held, lease=self.lease))
            except FerroqError as exc:
                log.warning('renewing %d leases failed: %s', len(held), exc)
                continue
            # Messages committed or released meanwhile are not held any more: only the rest are lost.
            current = {_key(m) for m in self._held()}
            lost = {_key(m) for m in held if m.id not in renewed} & current
            if lost:
                with self._lock:
                    keep = [m for m in self._ready if _key(m) not in lost]
                    self.stats.lost += len(self._ready) - len(keep)
                    self._ready.clear()
                    self._ready.extend(keep)
                log.warning('%d leases could not be renewed: their claims were lost', len(lost))

    async def _harvest_loop(self) -> None:
        assert self.harvest_interval is not None
        while True:
            for name, topic in self.topics.items():
                try:
                    requeued = await self._call(topic.harvest, lease=self.lease)
                except FerroqError as exc:
                    log.warning('harvest of %r failed: %s', name, exc)
                    continue
                if requeued:
                    log.info('harvest requeued %d expired claims of %r', len(requeued), name)
            if await self._quiet(self.harvest_interval):
                return

    async def _quiet(self, seconds: float) -> bool:
        """Sleep ``seconds``; True (at once) when the background tasks must end."""
        assert self._done_event is not None
        try:
            await asyncio.wait_for(self._done_event.wait(), seconds)
        except asyncio.TimeoutError:
            return False
        return True

    # --- the loop ----------------------------------------------------------------------------------

    def _install_signals(self) -> None:
        if not self.handle_signals or threading.current_thread() is not threading.main_thread():
            return
        assert self._loop is not None
        installed: list[int] = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                self._loop.add_signal_handler(sig, self._on_signal, sig)
            except (NotImplementedError, RuntimeError, ValueError):  # no signal support on this loop
                continue
            installed.append(sig)
        self._signals = installed

    def _remove_signals(self) -> None:
        assert self._loop is not None
        for sig in getattr(self, '_signals', []):
            self._loop.remove_signal_handler(sig)
        self._signals = []

    def _on_signal(self, sig: int) -> None:
        log.info('%s: finishing in-flight messages, then stopping (again to stop at once)', signal.Signals(sig).name)
        self._remove_signals()  # a second signal has its default effect
        self.stop()

    async def run(self) -> WorkerStats:
        if self._loop is not None:
            raise InvalidArgument('a worker runs once; make a new one')
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        # Set when the background tasks must end. They finish their current call rather than being
        # cancelled in the middle of it, so no request is left in flight when the worker returns.
        self._done_event = asyncio.Event()
        self._reset()
        self._install_signals()
        log.info(
            'worker %s started on %s: topics %s, concurrency %d, prefetch %d',
            self.name or '(unnamed)', self.client.url, list(self.topics), self.concurrency, self.prefetch,
        )  # fmt: skip
        background: list[asyncio.Future[Any]] = []
        try:
            if self.name is not None:
                for topic in self.topics.values():
                    resumed = await self._call(topic.resume, self.name, lease=self.lease)
                    if resumed:
                        log.info('resumed %d unfinished claims of %r', len(resumed), topic.name)
                    self._accept(resumed)
            background.append(self._loop.create_task(self._renew_loop()))
            if self.harvest_interval is not None:
                background.append(self._loop.create_task(self._harvest_loop()))
            await self._main()
            await self._shutdown()
        finally:
            self._stopping = True  # also when run() fails or is cancelled: lanes take no further message
            self._done_event.set()
            if self._claiming is not None:
                background.append(self._claiming)
            if self._flushing is not None:
                background.append(self._flushing)
            await asyncio.gather(*background, return_exceptions=True)
            self._remove_signals()
            for pool in (self._io, self._threads):
                if pool is not None:
                    pool.shutdown(wait=False)
        log.info('worker %s stopped: %s', self.name or '(unnamed)', self.stats)
        return self.stats

    async def _main(self) -> None:
        loop = self._loop
        assert loop is not None and self._wake is not None
        # A claim is sent once at most low_water messages are held, so it may take the rest of the prefetch.
        low_water = self.prefetch // 2
        claim_size = self.prefetch - low_water
        while not self._stopping:
            if self._failure is not None:
                raise self._failure
            if self._flushing is not None and self._flushing.done():
                await self._flushed()  # raises what recording the outcomes raised
            claimed_nothing = False
            # A claim that ended: its messages are made into Python objects (and accepted) once the next claim
            # is sent, so the server claims while this thread makes them.
            claimed: Claimed = []
            if self._claiming is not None and self._claiming.done():
                claimed = self._claiming.result()
                self._claiming = None
                claimed_nothing = not claimed
                self._maybe_drained = len(claimed) < claim_size
            # Burst: with nothing held or being claimed, look whether anything is left at all (backlog,
            # delayed retries, others' claims) rather than wait out a poll in a blocking claim.
            looked = False
            if self.burst and self._maybe_drained and self._claiming is None and not claimed and not self._held_count():
                if await self._drained():
                    return
                looked = True
            finished = self._take_done() if self._flush_due() else None
            # Claims run while handlers run and outcomes are recorded, so the server always has work;
            # a claim is sent before the commit, so its messages arrive while the server commits. A claim
            # is sent once the messages held are at most half the prefetch, so while handlers run that
            # half, the next claim is on its way. One claim at a time: two in flight may run on two
            # connections in either order, and a batch that holds the newer claim's messages first would
            # be committed out of the topic's order, which costs the server a walk of the nextlog. After
            # an empty claim, the next one waits for a wake or a poll. A claim made with nothing held blocks
            # (waits up to a poll for messages; in burst mode only right after the topics were found not
            # drained).
            held = self._held_count() + len(claimed)
            try:
                if (
                    self._claiming is None
                    and held <= low_water
                    and not self._stopping
                    and (not claimed_nothing or not held)
                ):
                    blocks = not held and (looked or not self.burst)
                    self._claiming = self._in_background(self._claim(claim_size, self.poll if blocks else None))
            finally:
                if claimed:  # made after the next claim was sent (see above)
                    self._accept(made(claimed))
            if finished is not None:
                self._flushing = self._in_background(self._flush(finished))
            # Lanes start last: an async lane runs until its messages are done, so the claim and the commit
            # made above are sent first.
            self._start()
            self._wake.clear()
            if self._finished() and self._flushing is None:
                timeout = max(0.0, COMMIT_LINGER - (time.monotonic() - self._first_done))
            else:
                timeout = self.poll  # a lane, a claim or a flush that ends, or stop(), wakes it earlier
            # A timer that sets the event, rather than wait_for: no task per turn of this loop.
            timer = loop.call_later(timeout, self._wake.set)
            try:
                await self._wake.wait()
            finally:
                timer.cancel()

    async def _shutdown(self) -> None:
        """Release what was not started, let running handlers finish, record every outcome."""
        assert self._wake is not None
        if self._claiming is not None:  # what it claims is released below
            self._accept(made(await asyncio.shield(self._claiming)))
            self._claiming = None
        with self._lock:
            unstarted = list(self._ready)
            self._ready.clear()
        if unstarted:
            released = await self._call(self.client.release, unstarted)
            self.stats.released += len(released)
            log.info('released %d prefetched messages', len(released))
        while len(self._free) < self.concurrency:  # lanes end after their current message
            self._wake.clear()
            await self._wake.wait()
        await self._flushed()
        if self._finished():
            self._flushing = self._in_background(self._flush(self._take_done()))
            await self._flushed()
        if self._failure is not None:
            raise self._failure


async def _awaited(awaitable: Awaitable[Any] | Any) -> Any:
    return await awaitable


_DOC_ARGS = """
    Args:
        client: a ``ferroq.Client``, ``ferroq.AsyncClient``, ``ferroq.pure.Client`` or ``ferroq.pure.AsyncClient``.
        topics: a topic name, or several in priority order (the first is drained first).
        handler: called with each :class:`~ferroq.Message`; a plain function runs on a thread, an
            ``async def`` on the worker's loop (one that never awaits holds up that loop; between two
            messages the worker gives the loop a turn at least every 5 ms). Returning commits the
            message; raising retries it.
        concurrency: handlers running at once.
        prefetch: messages held at most: claimed ahead of the handlers, running, or finished and not yet
            sent to be committed; default ``max(2 * concurrency, 10)``.
        lease: seconds each claim is leased for; renewed every ``lease / 3`` while held.
        max_deliveries: deliveries before a failing message goes to the dead-letter topic.
        retry_delay, retry_backoff, max_retry_delay: a failed delivery ``d`` is retried after
            ``min(retry_delay * retry_backoff ** (d - 1), max_retry_delay)`` seconds.
        dead_letter: the dead-letter topic of every topic; default ``<topic>.dead``.
        name: the worker's name: it owns a processing list under it and resumes it at start.
        poll: seconds an idle worker waits in one claim before looking again (also bounds how late a
            due retry is picked up when nothing else arrives).
        harvest_interval: seconds between background harvests of the topics; None: no harvester.
        burst: return once nothing is left: backlogs, nextlogs and delayed retries all empty (looked up
            as soon as a claim comes back short).
        handle_signals: stop gracefully on SIGINT/SIGTERM when run in the main thread.

    Raises:
        InvalidArgument: a bad setting (InvalidName for a bad topic name), before anything is sent.
"""


class _WorkerBase:
    def __init__(
        self,
        client: AnyClient,
        topics: str | Sequence[str],
        handler: Handler,
        *,
        concurrency: int = 1,
        prefetch: int | None = None,
        lease: float = 30.0,
        max_deliveries: int = 5,
        retry_delay: float = 1.0,
        retry_backoff: float = 2.0,
        max_retry_delay: float = 300.0,
        dead_letter: str | None = None,
        name: str | None = None,
        poll: float = 1.0,
        harvest_interval: float | None = 10.0,
        burst: bool = False,
        handle_signals: bool = True,
    ) -> None:
        self._engine = _Engine(
            client,
            topics,
            handler,
            concurrency=concurrency,
            prefetch=prefetch,
            lease=lease,
            max_deliveries=max_deliveries,
            retry_delay=retry_delay,
            retry_backoff=retry_backoff,
            max_retry_delay=max_retry_delay,
            dead_letter=dead_letter,
            name=name,
            poll=poll,
            harvest_interval=harvest_interval,
            burst=burst,
            handle_signals=handle_signals,
        )

    @property
    def stats(self) -> WorkerStats:
        """Counters so far (also returned by ``run()``)."""
        return self._engine.stats

    def backoff(self, deliveries: int) -> float:
        """Seconds before the retry of a message whose ``deliveries``-th delivery failed."""
        return self._engine.backoff(deliveries)

    def stop(self) -> None:
        """Stop gracefully: from any thread, a signal handler or a handler."""
        self._engine.stop()

    def __repr__(self) -> str:
        e = self._engine
        return f'{type(self).__name__}(topics={list(e.topics)!r}, name={e.name!r}, url={e.client.url!r})'


class Worker(_WorkerBase):
    __doc__ = 'A blocking worker: ``worker.run()`` returns when it stops.\n' + _DOC_ARGS

    def run(self) -> WorkerStats:
        """Process messages until ``stop()``, a signal, or (``burst``) nothing is left; returns the counters.

        Runs an asyncio loop in the calling thread (so not from inside a running loop: use AsyncWorker there).
        """
        return asyncio.run(self._engine.run())


class AsyncWorker(_WorkerBase):
    __doc__ = 'A worker for asyncio: ``await worker.run()``.\n' + _DOC_ARGS

    async def run(self) -> WorkerStats:
        """Process messages until ``stop()``, a signal, or (``burst``) nothing is left; returns the counters."""
        return await self._engine.run()
