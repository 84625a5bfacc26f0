"""What the sync and asyncio pure clients share: each handle's state and the plan of each of its methods.

A method of the API is written once here, as the plan it runs (``TopicPlans.publish`` and so on). The sync
handles turn each plan into a blocking method with :func:`blocking`, the asyncio ones into a coroutine method
with :func:`awaitable`: only that step, running the plan, differs. The protocols of :mod:`ferroq.typing` hold
the documentation of every method (:func:`documented_by` copies it).
"""

from __future__ import annotations

import functools
import inspect
import os
import re
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

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

if TYPE_CHECKING:
    from typing_extensions import Concatenate, ParamSpec

    P = ParamSpec('P')

T = TypeVar('T')
H = TypeVar('H')
C = TypeVar('C', bound=type)
F = TypeVar('F', bound=Callable[..., Any])
TopicT = TypeVar('TopicT')
QueueT = TypeVar('QueueT')
StreamT = TypeVar('StreamT')
GroupT = TypeVar('GroupT')
RefT = TypeVar('RefT')


# --- the I/O step: a plan as a blocking or a coroutine method --------------------------------------------


def blocking(build: Callable[Concatenate[H, P], Plan[T]]) -> Callable[Concatenate[H, P], T]:
    """A sync method that runs the plan ``build`` makes, on the handle's client."""

    def method(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self._run(build(self, *args, **kwargs))  # type: ignore[no-any-return]

    return _like(method, build)


def awaitable(build: Callable[Concatenate[H, P], Plan[T]]) -> Callable[Concatenate[H, P], Coroutine[Any, Any, T]]:
    """An ``async def`` method that runs the plan ``build`` makes, on the handle's client."""

    async def method(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self._run(build(self, *args, **kwargs))  # type: ignore[no-any-return]

    return _like(method, build)


_PLAN_OF = re.compile(r'Plan\[(.*)\]')


def _like(method: F, build: Callable[..., Any]) -> F:
    """``method`` with the name and signature of ``build``: ``self``, then its arguments; it returns what the
    plan returns."""
    functools.update_wrapper(method, build)
    del method.__wrapped__  # type: ignore[attr-defined]  # the signature below is the one to show
    signature = inspect.signature(build)
    first, *rest = signature.parameters.values()
    returns = signature.return_annotation
    if isinstance(returns, str) and (plan := _PLAN_OF.fullmatch(returns)):
        returns = plan[1]
    method.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[first.replace(name='self', annotation=first.empty), *rest], return_annotation=returns
    )
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


class TopicState(Handle[_rfq.TopicKeys]):
    __slots__ = ()

    @property
    def name(self) -> str:
        return self._ref.name

    def __repr__(self) -> str:
        return f'{type(self).__name__}(name={self._ref.name!r}, url={self._ctx.shown_url!r})'


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


# --- the plan of each method -----------------------------------------------------------------------------


class ClientPlans:
    """The plans of the client methods that do I/O."""

    @staticmethod
    def topics(c: ClientState[Any, Any, Any]) -> Plan[list[str]]:
        return _rfq.topics(c._ctx)

    @staticmethod
    def rsmq_queues(c: ClientState[Any, Any, Any], ns: str = 'rsmq') -> Plan[list[str]]:
        return _rsmq.queues(c._ctx, ns)

    @staticmethod
    def streams(c: ClientState[Any, Any, Any]) -> Plan[list[str]]:
        return _streams.streams(c._ctx)

    @staticmethod
    def claim(
        c: ClientState[Any, Any, Any],
        topics: Sequence[str],
        count: int = 1,
        block: float | None = None,
        lease: float = 30.0,
        owner: str | None = None,
    ) -> Plan[list[Message]]:
        return _rfq.claim_many(c._ctx, topics, count, block, lease, owner)

    @staticmethod
    def commit(c: ClientState[Any, Any, Any], messages: Iterable[Message]) -> Plan[list[str]]:
        return _rfq.commit_many(c._ctx, messages)

    @staticmethod
    def extend(c: ClientState[Any, Any, Any], messages: Iterable[Message], lease: float = 30.0) -> Plan[list[str]]:
        return _rfq.extend_many(c._ctx, messages, lease)

    @staticmethod
    def release(c: ClientState[Any, Any, Any], messages: Iterable[Message], delay: float = 0.0) -> Plan[list[str]]:
        return _rfq.release_many(c._ctx, messages, delay)

    @staticmethod
    def ping(c: ClientState[Any, Any, Any]) -> Plan[bool]:
        return _send.ping(c._ctx)


class TopicPlans:
    """The plans of the Topic methods."""

    @staticmethod
    def publish(t: TopicState, fields: Mapping[str, str], front: bool = False) -> Plan[str]:
        return _rfq.publish(t._ctx, t._ref, fields, front)

    @staticmethod
    def publish_batch(t: TopicState, messages: Iterable[Mapping[str, str]], front: bool = False) -> Plan[list[str]]:
        return _rfq.publish_batch(t._ctx, t._ref, messages, front)

    @staticmethod
    def publish_stream(t: TopicState, messages: Iterable[Mapping[str, str]]) -> Plan[int]:
        return _rfq.publish_stream(t._ctx, t._ref, messages)

    @staticmethod
    def publish_arrow(
        t: TopicState,
        data: Any,
        *,
        dedup_key: str | None = None,
        dedup_ttl: float = 86400.0,
        id_column: str | None = None,
        value_column: str | None = None,
    ) -> Plan[tuple[int, int]]:
        return _arrow.publish_topic(t._ctx, t._ref, data, dedup_key, dedup_ttl, id_column, value_column)

    @staticmethod
    def claim(
        t: TopicState, count: int = 1, block: float | None = None, lease: float = 30.0, owner: str | None = None
    ) -> Plan[list[Message]]:
        return _rfq.claim(t._ctx, t._ref, count, block, lease, owner)

    @staticmethod
    def commit(t: TopicState, messages: Iterable[Message | str]) -> Plan[list[str]]:
        return _rfq.commit(t._ctx, t._ref, messages)

    @staticmethod
    def extend(t: TopicState, messages: Iterable[Message | str], lease: float = 30.0) -> Plan[list[str]]:
        return _rfq.extend(t._ctx, t._ref, messages, lease)

    @staticmethod
    def release(t: TopicState, messages: Iterable[Message | str], delay: float = 0.0) -> Plan[list[str]]:
        return _rfq.release(t._ctx, t._ref, messages, delay)

    @staticmethod
    def dead_letter(
        t: TopicState, messages: Iterable[Message | str], error: str = '', to: str | None = None
    ) -> Plan[list[str]]:
        return _rfq.dead_letter(t._ctx, t._ref, messages, error, to)

    @staticmethod
    def resume(t: TopicState, owner: str, lease: float = 30.0) -> Plan[list[Message]]:
        return _rfq.resume(t._ctx, t._ref, owner, lease)

    @staticmethod
    def harvest(t: TopicState, all: bool = False, lease: float = 30.0) -> Plan[list[str]]:
        return _rfq.harvest(t._ctx, t._ref, all, lease)

    @staticmethod
    def peek(t: TopicState, id: str) -> Plan[dict[str, str] | None]:
        return _rfq.peek(t._ctx, t._ref, id)

    @staticmethod
    def fetch_arrow(t: TopicState, ids: Iterable[str], fields: Iterable[str]) -> Plan[Any]:
        return _rfq.fetch_arrow(t._ctx, t._ref, ids, fields)

    @staticmethod
    def inspect(
        t: TopicState, queue: Literal['backlog', 'nextlog'] = 'backlog', start: int = 0, count: int = 100
    ) -> Plan[list[InspectEntry]]:
        return _rfq.inspect(t._ctx, t._ref, queue, start, count)

    @staticmethod
    def stats(t: TopicState) -> Plan[TopicStats]:
        return _rfq.stats(t._ctx, t._ref)

    @staticmethod
    def purge(t: TopicState, queue: Literal['backlog', 'nextlog'] = 'backlog') -> Plan[int]:
        return _rfq.purge(t._ctx, t._ref, queue)


class RsmqPlans:
    """The plans of the RsmqQueue methods."""

    @staticmethod
    def create(
        q: RsmqState,
        vt: int = 30,
        delay: int = 0,
        maxsize: int = 65536,
        *,
        max_receives: int | None = None,
        dead_letter: str | None = None,
    ) -> Plan[None]:
        return _rsmq.create(q._ctx, q._ref, vt, delay, maxsize, max_receives, dead_letter)

    @staticmethod
    def delete_queue(q: RsmqState) -> Plan[None]:
        return _rsmq.delete_queue(q._ctx, q._ref)

    @staticmethod
    def attributes(q: RsmqState) -> Plan[RsmqAttributes]:
        return _rsmq.attributes(q._ctx, q._ref)

    @staticmethod
    def set_attributes(
        q: RsmqState,
        vt: int | None = None,
        delay: int | None = None,
        maxsize: int | None = None,
        *,
        max_receives: int | None = None,
        dead_letter: str | None = None,
    ) -> Plan[RsmqAttributes]:
        return _rsmq.set_attributes(q._ctx, q._ref, vt, delay, maxsize, max_receives, dead_letter)

    @staticmethod
    def send(q: RsmqState, message: str, delay: float | None = None) -> Plan[str]:
        return _rsmq.send_one(q._ctx, q._ref, message, delay)

    @staticmethod
    def send_arrow(
        q: RsmqState,
        data: Any,
        *,
        dedup_key: str | None = None,
        dedup_ttl: float = 86400.0,
        value_column: str | None = None,
        delay: float | None = None,
    ) -> Plan[tuple[int, int]]:
        return _arrow.send_rsmq(q._ctx, q._ref, data, dedup_key, dedup_ttl, value_column, delay)

    @staticmethod
    def send_batch(q: RsmqState, messages: Iterable[str], delay: float | None = None) -> Plan[list[str]]:
        return _rsmq.send_batch(q._ctx, q._ref, messages, delay)

    @staticmethod
    def receive(q: RsmqState, vt: float | None = None, block: float | None = None) -> Plan[RsmqMessage | None]:
        return _first(_rsmq.receive(q._ctx, q._ref, 1, vt, block))

    @staticmethod
    def receive_batch(
        q: RsmqState, count: int, vt: float | None = None, block: float | None = None
    ) -> Plan[list[RsmqMessage]]:
        return _rsmq.receive(q._ctx, q._ref, count, vt, block)

    @staticmethod
    def pop(q: RsmqState) -> Plan[RsmqMessage | None]:
        return _first(_rsmq.receive(q._ctx, q._ref, 1, None, None, pop=True))

    @staticmethod
    def pop_batch(q: RsmqState, count: int) -> Plan[list[RsmqMessage]]:
        return _rsmq.receive(q._ctx, q._ref, count, None, None, pop=True)

    @staticmethod
    def delete(q: RsmqState, id: str) -> Plan[bool]:
        return _rsmq.delete(q._ctx, q._ref, id)

    @staticmethod
    def delete_batch(q: RsmqState, ids: Iterable[str]) -> Plan[list[str]]:
        return _rsmq.delete_batch(q._ctx, q._ref, ids)

    @staticmethod
    def change_visibility(q: RsmqState, id: str, vt: float) -> Plan[bool]:
        return _rsmq.change_visibility(q._ctx, q._ref, id, vt)


def _first(plan: Plan[list[T]]) -> Plan[T | None]:
    """The first item of what ``plan`` returns, or None."""
    items = yield from plan
    return items[0] if items else None


class StreamPlans:
    """The plans of the Stream methods."""

    @staticmethod
    def publish(
        s: StreamState[Any],
        fields: Mapping[str, str],
        *,
        maxlen: int | None = None,
        max_age: float | None = None,
        approximate: bool = True,
    ) -> Plan[str]:
        return _streams.publish(s._ctx, s._ref, fields, maxlen, max_age, approximate)

    @staticmethod
    def publish_batch(
        s: StreamState[Any],
        messages: Iterable[Mapping[str, str]],
        *,
        maxlen: int | None = None,
        max_age: float | None = None,
        approximate: bool = True,
    ) -> Plan[list[str]]:
        return _streams.publish_batch(s._ctx, s._ref, messages, maxlen, max_age, approximate)

    @staticmethod
    def publish_arrow(
        s: StreamState[Any],
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
            s._ctx, s._ref, data, dedup_key, dedup_ttl, value_column, maxlen, max_age, approximate
        )

    @staticmethod
    def length(s: StreamState[Any]) -> Plan[int]:
        return _streams.length(s._ctx, s._ref)

    @staticmethod
    def range(
        s: StreamState[Any], start: str | datetime = '-', end: str | datetime = '+', count: int = 100
    ) -> Plan[list[StreamEntry]]:
        return _streams.range_(s._ctx, s._ref, start, end, count)

    @staticmethod
    def range_arrow(
        s: StreamState[Any], start: str | datetime, end: str | datetime, count: int, fields: Iterable[str]
    ) -> Plan[Any]:
        return _streams.range_arrow(s._ctx, s._ref, start, end, count, fields)

    @staticmethod
    def trim(
        s: StreamState[Any], *, maxlen: int | None = None, max_age: float | None = None, approximate: bool = True
    ) -> Plan[int]:
        return _streams.trim(s._ctx, s._ref, maxlen, max_age, approximate)

    @staticmethod
    def info(s: StreamState[Any]) -> Plan[StreamInfo]:
        return _streams.info(s._ctx, s._ref)

    @staticmethod
    def groups(s: StreamState[Any]) -> Plan[list[GroupInfo]]:
        return _streams.groups(s._ctx, s._ref)

    @staticmethod
    def delete(s: StreamState[Any]) -> Plan[bool]:
        return _streams.delete(s._ctx, s._ref)


class GroupPlans:
    """The plans of the ConsumerGroup methods."""

    @staticmethod
    def create(g: GroupState, start: str | datetime = '$', *, exist_ok: bool = True) -> Plan[bool]:
        return _streams.create(g._ctx, g._ref, start, exist_ok)

    @staticmethod
    def read(g: GroupState, count: int = 1, block: float | None = None) -> Plan[list[StreamEntry]]:
        return _streams.read(g._ctx, g._ref, count, block)

    @staticmethod
    def ack(g: GroupState, entries: Iterable[StreamEntry | str]) -> Plan[list[str]]:
        return _streams.ack(g._ctx, g._ref, entries)

    @staticmethod
    def pending(
        g: GroupState, count: int = 100, *, consumer: str | None = None, min_idle: float | None = None
    ) -> Plan[list[PendingEntry]]:
        return _streams.pending(g._ctx, g._ref, count, consumer, min_idle)

    @staticmethod
    def autoclaim(g: GroupState, min_idle: float, count: int = 100, *, error: str = '') -> Plan[list[StreamEntry]]:
        return _streams.autoclaim(g._ctx, g._ref, min_idle, count, error)

    @staticmethod
    def dead_letter(g: GroupState, entries: Iterable[StreamEntry | str], error: str = '') -> Plan[list[str]]:
        return _streams.dead_letter(g._ctx, g._ref, entries, error)

    @staticmethod
    def seek(g: GroupState, position: str | datetime) -> Plan[None]:
        return _streams.seek(g._ctx, g._ref, position)

    @staticmethod
    def info(g: GroupState) -> Plan[GroupInfo]:
        return _streams.group_info(g._ctx, g._ref)

    @staticmethod
    def delete(g: GroupState) -> Plan[bool]:
        return _streams.delete_group(g._ctx, g._ref)
