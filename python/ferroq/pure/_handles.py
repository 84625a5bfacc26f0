"""What the sync and asyncio pure clients share: each handle's state and each method of the API.

A method is written once here, as an :class:`operation` that builds the plan it runs (``TopicState.publish``
and so on). ``ferroq.pure.Topic`` is ``TopicState`` with :class:`SyncMode`, which makes each operation a
blocking method; ``ferroq.pure.AsyncTopic`` is ``TopicState`` with :class:`AsyncMode`, which makes it a
coroutine method: only that step, running the plan, differs. The protocols of :mod:`ferroq.typing` hold the
documentation of every method (``documented_by`` copies it).
"""

from __future__ import annotations

import functools
import inspect
import os
import re
import sys
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar, overload

from ferroq.pure import _arrow, _rfq, _rsmq, _send, _settings, _streams, _validation
from ferroq.pure._requests import Plan
from ferroq.types import (
    GroupInfo,
    InspectEntry,
    Message,
    PendingEntry,
    RsmqAttributes,
    RsmqMessage,
    StreamEntry,
    StreamInfo,
    TopicStats,
)

if sys.version_info >= (3, 10):
    from typing import Concatenate, ParamSpec

    P = ParamSpec('P')
else:  # Python 3.9 has no ParamSpec: a TypeVar stands in at run time, where the annotations are not read
    P = TypeVar('P')

T = TypeVar('T')
H = TypeVar('H')
F = TypeVar('F', bound=Callable[..., Any])
TopicT = TypeVar('TopicT')
QueueT = TypeVar('QueueT')
StreamT = TypeVar('StreamT')
GroupT = TypeVar('GroupT')
RefT = TypeVar('RefT')


# --- the I/O step: a plan as a blocking or a coroutine method --------------------------------------------


class operation(Generic[H, P, T]):
    """A method of the API, written once as the plan it runs; the class that mixes in :class:`SyncMode` gets it as
    a blocking method, the one that mixes in :class:`AsyncMode` as a coroutine method (``__init_subclass__``
    puts the real functions on the class, so nothing is looked up per call)."""

    def __init__(self, build: Callable[Concatenate[H, P], Plan[T]]) -> None:
        self.build = build

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> operation[H, P, T]: ...
    @overload
    def __get__(self, obj: SyncMode, owner: type | None = None) -> Callable[P, T]: ...
    @overload
    def __get__(self, obj: AsyncMode, owner: type | None = None) -> Callable[P, Coroutine[Any, Any, T]]: ...
    def __get__(self, obj: object, owner: type | None = None) -> Any:
        if obj is None:
            return self
        raise TypeError(f'{type(obj).__name__} is neither a SyncMode nor an AsyncMode handle')


def _materialize(cls: type, run: Callable[[Callable[..., Plan[Any]]], Callable[..., Any]]) -> None:
    """Put on ``cls`` a real method for each :class:`operation` it inherits."""
    for klass in reversed(cls.__mro__):
        for name, member in vars(klass).items():
            if isinstance(member, operation):
                setattr(cls, name, run(member.build))


class SyncMode:
    """Mixed into a sync handle or client: each :class:`operation` runs its plan and returns the result."""

    __slots__ = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _materialize(cls, _blocking)


class AsyncMode:
    """Mixed into an asyncio handle or client: each :class:`operation` is a coroutine method."""

    __slots__ = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _materialize(cls, _awaitable)


def _blocking(build: Callable[..., Plan[T]]) -> Callable[..., T]:
    def method(self: Any, /, *args: Any, **kwargs: Any) -> T:
        return self._run(build(self, *args, **kwargs))  # type: ignore[no-any-return]

    return _like(method, build)


def _awaitable(build: Callable[..., Plan[T]]) -> Callable[..., Coroutine[Any, Any, T]]:
    async def method(self: Any, /, *args: Any, **kwargs: Any) -> T:
        return await self._run(build(self, *args, **kwargs))  # type: ignore[no-any-return]

    return _like(method, build)


_PLAN_OF = re.compile(r'Plan\[(.*)\]')


def _like(method: F, build: Callable[..., Any]) -> F:
    """``method`` with the name, docstring and signature of ``build``; it returns what the plan returns."""
    functools.update_wrapper(method, build)
    del method.__wrapped__  # type: ignore[attr-defined]  # the signature below is the one to show
    signature = inspect.signature(build)
    returns = signature.return_annotation
    if isinstance(returns, str) and (plan := _PLAN_OF.fullmatch(returns)):
        returns = plan[1]
    method.__signature__ = signature.replace(return_annotation=returns)  # type: ignore[attr-defined]
    return method


# --- state -----------------------------------------------------------------------------------------------


class Handle(Generic[RefT]):
    """A topic, queue, stream or group of a client (``ref``: its name and keys): runs its plans on the client."""

    __slots__ = ('_client', '_ctx', '_ref')

    def __init__(self, client: Any, ref: RefT) -> None:
        self._client = client
        self._ctx: _settings.Settings = client._ctx
        self._ref = ref

    def _run(self, plan: Plan[T]) -> Any:
        """The client's run of ``plan``: its result (sync) or an awaitable of it (asyncio)."""
        return self._client._run(plan)


class ClientState(Generic[TopicT, QueueT, StreamT]):
    """Options, and the handles a client makes without I/O; each client adds its pools and its ``_run``."""

    _topic_class: Callable[[Any, _rfq.TopicKeys], TopicT]
    _queue_class: Callable[[Any, _rsmq.RsmqRef], QueueT]
    _stream_class: Callable[[Any, _streams.StreamRef], StreamT]

    def __init__(
        self,
        url: str | None = None,
        *,
        pool_size: int = 2,
        connect_timeout: float = 5.0,
        command_timeout: float = 10.0,
        max_message_bytes: int = 1048576,
        chunk_size: int = 1000,
        client_name: str | None = None,
        username: str | None = None,
        password: str | None = None,
        password_file: str | os.PathLike[str] | None = None,
        tls_ca_file: str | os.PathLike[str] | None = None,
        tls_cert_file: str | os.PathLike[str] | None = None,
        tls_key_file: str | os.PathLike[str] | None = None,
        tls_insecure_skip_verify: bool = False,
    ) -> None:
        self._ctx = _settings.settings(
            url,
            pool_size=pool_size,
            connect_timeout=connect_timeout,
            command_timeout=command_timeout,
            max_message_bytes=max_message_bytes,
            chunk_size=chunk_size,
            client_name=client_name,
            username=username,
            password=password,
            password_file=password_file,
            tls_ca_file=tls_ca_file,
            tls_cert_file=tls_cert_file,
            tls_key_file=tls_key_file,
            tls_insecure_skip_verify=tls_insecure_skip_verify,
        )
        self._closed = False
        self._policy_checked = False
        self._open()

    def _open(self) -> None:
        raise NotImplementedError

    @property
    def url(self) -> str:
        return self._ctx.shown_url

    def __repr__(self) -> str:
        return f'{type(self).__name__}(url={self._ctx.shown_url!r})'

    def topic(self, name: str) -> TopicT:
        return self._topic_class(self, _rfq.topic_keys(_validation.check_topic(name)))

    def rsmq(self, qname: str, ns: str = 'rsmq', *, realtime: bool = False) -> QueueT:
        return self._queue_class(self, _rsmq.queue_ref(qname, ns, realtime))

    def stream(self, name: str) -> StreamT:
        return self._stream_class(self, _streams.stream_ref(name))

    @operation
    def topics(self) -> Plan[list[str]]:
        return _rfq.topics(self._ctx)

    @operation
    def rsmq_queues(self, ns: str = 'rsmq') -> Plan[list[str]]:
        return _rsmq.queues(self._ctx, ns)

    @operation
    def streams(self) -> Plan[list[str]]:
        return _streams.streams(self._ctx)

    @operation
    def claim(
        self,
        topics: Sequence[str],
        count: int = 1,
        block: float | None = None,
        lease: float = 30.0,
        owner: str | None = None,
    ) -> Plan[list[Message]]:
        return _rfq.claim_many(self._ctx, topics, count, block, lease, owner)

    @operation
    def commit(self, messages: Iterable[Message]) -> Plan[list[str]]:
        return _rfq.commit(self._ctx, None, messages)

    @operation
    def extend(self, messages: Iterable[Message], lease: float = 30.0) -> Plan[list[str]]:
        return _rfq.extend(self._ctx, None, messages, lease)

    @operation
    def release(self, messages: Iterable[Message], delay: float = 0.0) -> Plan[list[str]]:
        return _rfq.release(self._ctx, None, messages, delay)

    @operation
    def ping(self) -> Plan[bool]:
        return _send.ping(self._ctx)


class TopicState(Handle[_rfq.TopicKeys]):
    __slots__ = ()

    @property
    def name(self) -> str:
        return self._ref.name

    def __repr__(self) -> str:
        return f'{type(self).__name__}(name={self._ref.name!r}, url={self._ctx.shown_url!r})'

    @operation
    def publish(self, fields: Mapping[str, str], front: bool = False) -> Plan[str]:
        return _rfq.publish(self._ctx, self._ref, fields, front)

    @operation
    def publish_batch(self, messages: Iterable[Mapping[str, str]], front: bool = False) -> Plan[list[str]]:
        return _rfq.publish_batch(self._ctx, self._ref, messages, front)

    @operation
    def publish_stream(self, messages: Iterable[Mapping[str, str]]) -> Plan[int]:
        return _rfq.publish_stream(self._ctx, self._ref, messages)

    @operation
    def publish_arrow(
        self,
        data: Any,
        *,
        dedup_key: str | None = None,
        dedup_ttl: float = 86400.0,
        id_column: str | None = None,
        value_column: str | None = None,
    ) -> Plan[tuple[int, int]]:
        return _arrow.publish_topic(self._ctx, self._ref, data, dedup_key, dedup_ttl, id_column, value_column)

    @operation
    def claim(
        self, count: int = 1, block: float | None = None, lease: float = 30.0, owner: str | None = None
    ) -> Plan[list[Message]]:
        return _rfq.claim(self._ctx, self._ref, count, block, lease, owner)

    @operation
    def commit(self, messages: Iterable[Message | str]) -> Plan[list[str]]:
        return _rfq.commit(self._ctx, self._ref, messages)

    @operation
    def extend(self, messages: Iterable[Message | str], lease: float = 30.0) -> Plan[list[str]]:
        return _rfq.extend(self._ctx, self._ref, messages, lease)

    @operation
    def release(self, messages: Iterable[Message | str], delay: float = 0.0) -> Plan[list[str]]:
        return _rfq.release(self._ctx, self._ref, messages, delay)

    @operation
    def dead_letter(self, messages: Iterable[Message | str], error: str = '', to: str | None = None) -> Plan[list[str]]:
        return _rfq.dead_letter(self._ctx, self._ref, messages, error, to)

    @operation
    def resume(self, owner: str, lease: float = 30.0) -> Plan[list[Message]]:
        return _rfq.resume(self._ctx, self._ref, owner, lease)

    @operation
    def harvest(self, all: bool = False, lease: float = 30.0) -> Plan[list[str]]:
        return _rfq.harvest(self._ctx, self._ref, all, lease)

    @operation
    def peek(self, id: str) -> Plan[dict[str, str] | None]:
        return _rfq.peek(self._ctx, self._ref, id)

    @operation
    def fetch_arrow(self, ids: Iterable[str], fields: Iterable[str], *, held: bool = False) -> Plan[Any]:
        return _rfq.fetch_arrow(self._ctx, self._ref, ids, fields, held)

    @operation
    def inspect(
        self, queue: Literal['backlog', 'nextlog'] = 'backlog', start: int = 0, count: int = 100
    ) -> Plan[list[InspectEntry]]:
        return _rfq.inspect(self._ctx, self._ref, queue, start, count)

    @operation
    def stats(self) -> Plan[TopicStats]:
        return _rfq.stats(self._ctx, self._ref)

    @operation
    def purge(self, queue: Literal['backlog', 'nextlog'] = 'backlog') -> Plan[int]:
        return _rfq.purge(self._ctx, self._ref, queue)


class RsmqState(Handle[_rsmq.RsmqRef]):
    __slots__ = ()

    @property
    def name(self) -> str:
        return self._ref.name

    @property
    def ns(self) -> str:
        return self._ref.ns

    @property
    def realtime(self) -> bool:
        return self._ref.realtime

    def __repr__(self) -> str:
        return f'{type(self).__name__}(name={self._ref.name!r}, ns={self._ref.ns!r}, url={self._ctx.shown_url!r})'

    @operation
    def create(
        self,
        vt: int = 30,
        delay: int = 0,
        maxsize: int = 65536,
        *,
        max_receives: int | None = None,
        dead_letter: str | None = None,
    ) -> Plan[None]:
        return _rsmq.create(self._ctx, self._ref, vt, delay, maxsize, max_receives, dead_letter)

    @operation
    def delete_queue(self) -> Plan[None]:
        return _rsmq.delete_queue(self._ctx, self._ref)

    @operation
    def attributes(self) -> Plan[RsmqAttributes]:
        return _rsmq.attributes(self._ctx, self._ref)

    @operation
    def set_attributes(
        self,
        vt: int | None = None,
        delay: int | None = None,
        maxsize: int | None = None,
        *,
        max_receives: int | None = None,
        dead_letter: str | None = None,
    ) -> Plan[RsmqAttributes]:
        return _rsmq.set_attributes(self._ctx, self._ref, vt, delay, maxsize, max_receives, dead_letter)

    @operation
    def send(self, message: str, delay: float | None = None) -> Plan[str]:
        return _rsmq.send_one(self._ctx, self._ref, message, delay)

    @operation
    def send_arrow(
        self,
        data: Any,
        *,
        dedup_key: str | None = None,
        dedup_ttl: float = 86400.0,
        value_column: str | None = None,
        delay: float | None = None,
    ) -> Plan[tuple[int, int]]:
        return _arrow.send_rsmq(self._ctx, self._ref, data, dedup_key, dedup_ttl, value_column, delay)

    @operation
    def send_batch(self, messages: Iterable[str], delay: float | None = None) -> Plan[list[str]]:
        return _rsmq.send_batch(self._ctx, self._ref, messages, delay)

    @operation
    def receive(self, vt: float | None = None, block: float | None = None) -> Plan[RsmqMessage | None]:
        return _first(_rsmq.receive(self._ctx, self._ref, 1, vt, block))

    @operation
    def receive_batch(self, count: int, vt: float | None = None, block: float | None = None) -> Plan[list[RsmqMessage]]:
        return _rsmq.receive(self._ctx, self._ref, count, vt, block)

    @operation
    def pop(self) -> Plan[RsmqMessage | None]:
        return _first(_rsmq.receive(self._ctx, self._ref, 1, None, None, pop=True))

    @operation
    def pop_batch(self, count: int) -> Plan[list[RsmqMessage]]:
        return _rsmq.receive(self._ctx, self._ref, count, None, None, pop=True)

    @operation
    def delete(self, id: str) -> Plan[bool]:
        return _rsmq.delete(self._ctx, self._ref, id)

    @operation
    def delete_batch(self, ids: Iterable[str]) -> Plan[list[str]]:
        return _rsmq.delete_batch(self._ctx, self._ref, ids)

    @operation
    def change_visibility(self, id: str, vt: float) -> Plan[bool]:
        return _rsmq.change_visibility(self._ctx, self._ref, id, vt)


class StreamState(Handle[_streams.StreamRef], Generic[GroupT]):
    __slots__ = ()

    _group_class: Callable[[Any, _streams.GroupRef], GroupT]

    @property
    def name(self) -> str:
        return self._ref.name

    def __repr__(self) -> str:
        return f'{type(self).__name__}(name={self._ref.name!r})'

    def group(
        self,
        name: str,
        consumer: str | None = None,
        *,
        max_deliveries: int | None = None,
        dead_letter: str | None = None,
    ) -> GroupT:
        ref = _streams.group_ref(self._ref, name, consumer, max_deliveries, dead_letter)
        return self._group_class(self._client, ref)

    @operation
    def publish(
        self,
        fields: Mapping[str, str],
        *,
        maxlen: int | None = None,
        max_age: float | None = None,
        approximate: bool = True,
    ) -> Plan[str]:
        return _streams.publish(self._ctx, self._ref, fields, maxlen, max_age, approximate)

    @operation
    def publish_batch(
        self,
        messages: Iterable[Mapping[str, str]],
        *,
        maxlen: int | None = None,
        max_age: float | None = None,
        approximate: bool = True,
    ) -> Plan[list[str]]:
        return _streams.publish_batch(self._ctx, self._ref, messages, maxlen, max_age, approximate)

    @operation
    def publish_arrow(
        self,
        data: Any,
        *,
        dedup_key: str | None = None,
        dedup_ttl: float = 86400.0,
        value_column: str | None = None,
        maxlen: int | None = None,
        max_age: float | None = None,
        approximate: bool = True,
    ) -> Plan[tuple[int, int]]:
        return _arrow.publish_stream(
            self._ctx, self._ref, data, dedup_key, dedup_ttl, value_column, maxlen, max_age, approximate
        )

    @operation
    def length(self) -> Plan[int]:
        return _streams.length(self._ctx, self._ref)

    @operation
    def range(
        self, start: str | datetime = '-', end: str | datetime = '+', count: int = 100
    ) -> Plan[list[StreamEntry]]:
        return _streams.range_(self._ctx, self._ref, start, end, count)

    @operation
    def range_arrow(self, start: str | datetime, end: str | datetime, count: int, fields: Iterable[str]) -> Plan[Any]:
        return _streams.range_arrow(self._ctx, self._ref, start, end, count, fields)

    @operation
    def trim(self, *, maxlen: int | None = None, max_age: float | None = None, approximate: bool = True) -> Plan[int]:
        return _streams.trim(self._ctx, self._ref, maxlen, max_age, approximate)

    @operation
    def info(self) -> Plan[StreamInfo]:
        return _streams.info(self._ctx, self._ref)

    @operation
    def groups(self) -> Plan[list[GroupInfo]]:
        return _streams.groups(self._ctx, self._ref)

    @operation
    def delete(self) -> Plan[bool]:
        return _streams.delete(self._ctx, self._ref)


class GroupState(Handle[_streams.GroupRef]):
    __slots__ = ()

    @property
    def name(self) -> str:
        return self._ref.name

    @property
    def consumer(self) -> str:
        return self._ref.consumer

    @property
    def stream(self) -> str:
        return self._ref.stream.name

    @property
    def max_deliveries(self) -> int | None:
        return self._ref.max_deliveries

    @property
    def dead_letter_stream(self) -> str:
        return self._ref.dead.name

    def __repr__(self) -> str:
        ref = self._ref
        return f'{type(self).__name__}(stream={ref.stream.name!r}, name={ref.name!r}, consumer={ref.consumer!r})'

    @operation
    def create(self, start: str | datetime = '$', *, exist_ok: bool = True) -> Plan[bool]:
        return _streams.create(self._ctx, self._ref, start, exist_ok)

    @operation
    def read(self, count: int = 1, block: float | None = None) -> Plan[list[StreamEntry]]:
        return _streams.read(self._ctx, self._ref, count, block)

    @operation
    def ack(self, entries: Iterable[StreamEntry | str]) -> Plan[list[str]]:
        return _streams.ack(self._ctx, self._ref, entries)

    @operation
    def pending(
        self, count: int = 100, *, consumer: str | None = None, min_idle: float | None = None
    ) -> Plan[list[PendingEntry]]:
        return _streams.pending(self._ctx, self._ref, count, consumer, min_idle)

    @operation
    def autoclaim(self, min_idle: float, count: int = 100, *, error: str = '') -> Plan[list[StreamEntry]]:
        return _streams.autoclaim(self._ctx, self._ref, min_idle, count, error)

    @operation
    def dead_letter(self, entries: Iterable[StreamEntry | str], error: str = '') -> Plan[list[str]]:
        return _streams.dead_letter(self._ctx, self._ref, entries, error)

    @operation
    def seek(self, position: str | datetime) -> Plan[None]:
        return _streams.seek(self._ctx, self._ref, position)

    @operation
    def info(self) -> Plan[GroupInfo]:
        return _streams.group_info(self._ctx, self._ref)

    @operation
    def delete(self) -> Plan[bool]:
        return _streams.delete_group(self._ctx, self._ref)


def _first(plan: Plan[list[T]]) -> Plan[T | None]:
    """The first item of what ``plan`` returns, or None."""
    items = yield from plan
    return items[0] if items else None
