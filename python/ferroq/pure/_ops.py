"""The logic shared by both pure clients: validation, requests, reply decoding and error mapping.

Every operation is written once, as a generator that *yields requests* and receives their replies
(the "sans-I/O" style): :class:`ferroq.pure.Client` runs it with blocking redis-py calls and
:class:`ferroq.pure.AsyncClient` with redis.asyncio. A client executes a request and sends back its
reply, or the redis-py exception it raised (never raising it itself), so the retry policy lives here too:

- NOSCRIPT: ``SCRIPT LOAD`` and run again the commands that were refused;
- LOADING: wait (up to 10 s) and run them again, then ConnectionFailed;
- a dropped connection: run the whole request once more, only for insert-if-absent or fenced writes
  (publish, commit, extend);
- anything else: :func:`map_error` turns it into a :mod:`ferroq.exceptions` class.

Arguments are validated before the first request is yielded, so bad input never reaches Redis.
"""

from __future__ import annotations

import itertools
import math
import os
import random
import re
import time
import uuid
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, NamedTuple, TypeVar, Union

from redis import exceptions as rex

from ferroq import connection, protocol
from ferroq.exceptions import (
    BatchError,
    CommandTimeout,
    ConnectionFailed,
    FerroqError,
    InvalidArgument,
    InvalidMessage,
    InvalidName,
    MessageTooLarge,
    OutOfMemory,
    PermissionDenied,
    ProtocolError,
    ServerError,
    TlsError,
    UnsupportedServer,
)
from ferroq.protocol import keys
from ferroq.types import InspectEntry, Message, StreamEntry, TopicStats, published_at

T = TypeVar('T')

MAX_COUNT = 10_000
MAX_SECONDS = 604_800.0  # 7 days: the longest lease or block
MAX_ID_LENGTH = 128
#: Messages per harvest or purge script call, so Redis is never blocked for long.
STEP = 1000
LOADING_WAIT = 10.0
CLOSED = 'client is closed'

_TOPIC_RE = re.compile(keys.TOPIC_NAME_PATTERN)
_ID_RE = re.compile(rf'\S{{1,{MAX_ID_LENGTH}}}')
_SCHEMES = ('redis://', 'rediss://', 'unix://')
_SHA = protocol.script_hashes()
_SCRIPT_BY_SHA = {sha: name for name, sha in _SHA.items()}


# --- requests: what a client executes ------------------------------------------------------------


class Call(NamedTuple):
    """One command. Reply: its result, or the exception redis-py raised. ``raw``: strings as bytes."""

    args: tuple[str, ...]
    raw: bool = False


class Pipe(NamedTuple):
    """Commands in one round trip (a redis-py pipeline with ``transaction=False``).

    Reply: the list of results, each a value or an exception; or one exception when the connection failed.
    """

    commands: list[tuple[str, ...]]
    raw: bool = False


class Block(NamedTuple):
    """A blocking command on a dedicated connection, waiting up to ``timeout`` seconds for the reply."""

    args: tuple[str, ...]
    timeout: float


class Sleep(NamedTuple):
    """Wait, without blocking other tasks in the async client. Reply: None."""

    seconds: float


class Subscribe(NamedTuple):
    """SUBSCRIBE on a dedicated connection held until the operation ends; waits for the confirmation.

    Reply: None, or the redis-py exception.
    """

    channel: str


class Listen(NamedTuple):
    """Wait up to ``timeout`` seconds for a message on the :class:`Subscribe` d channel (draining any queued).

    Reply: True if one came, else False; or the redis-py exception.
    """

    timeout: float


class Watched(NamedTuple):
    """A watched transaction, on a connection nobody else uses meanwhile (WATCH is per connection): ``WATCH key``
    and ``GET key`` in one round trip, then ``build(value)`` (the GET reply) gives the commands to run between
    ``MULTI`` and ``EXEC`` in one more round trip, or None to ``UNWATCH`` and run nothing. ``forget``: then
    ``DEL key`` (best effort: its failure is not reported, as what came before stands).

    Reply: the list of EXEC's results (each a value or an exception); None when EXEC was aborted because ``key``
    changed since WATCH; [] when ``build`` gave None; or the redis-py exception (for EXECABORT, the error of the
    command refused while queuing).
    """

    key: str
    build: Callable[[Any], list[tuple[str, ...]] | None]
    forget: bool = False


Request = Union[Call, Pipe, Block, Sleep, Subscribe, Listen, Watched]


def options(request: Call | Pipe) -> dict[str, Any]:
    """redis-py's options for the commands of ``request``: NEVER_DECODE for a raw one."""
    return {'NEVER_DECODE': True} if request.raw else {}


#: Commands whose replies the plans decode in Redis's own (RESP2) shape: the clients turn redis-py's parsing of
#: them off (it differs between redis-py versions, and a :class:`Block` reply is never parsed anyway).
RAW_REPLIES = ('XPENDING', 'XRANGE', 'XREADGROUP')
#: An operation: yields requests, receives replies, returns the operation's result.
Plan = Generator[Request, Any, T]


# --- settings ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    """A client's validated options. ``url`` holds the password: never print it, use ``shown_url``."""

    url: str = field(repr=False)
    shown_url: str
    pool_size: int
    connect_timeout: float
    command_timeout: float
    max_message_bytes: int
    chunk_size: int
    client_name: str | None
    #: Credentials and TLS settings (:func:`ferroq.connection.resolve`).
    endpoint: connection.Endpoint = field(default_factory=lambda: connection.Endpoint('', ''), repr=False)

    def pool_kwargs(self) -> dict[str, Any]:
        """redis-py connection options shared by both clients' pools (they add their own ``retry``)."""
        kwargs: dict[str, Any] = {
            'decode_responses': True,
            'protocol': 2,  # RESP2: Lua false is nil, as the replies are decoded here
            'socket_connect_timeout': self.connect_timeout,
            'socket_timeout': self.command_timeout,
        }
        if self.client_name is not None:
            kwargs['client_name'] = self.client_name
        kwargs.update(self.endpoint.redis_py_kwargs())
        return kwargs

    @property
    def max_connections(self) -> int:
        # redis-py connections carry one request at a time: leave room for concurrent threads and tasks.
        return max(self.pool_size, 16)


def settings(
    url: str | None,
    *,
    pool_size: int,
    connect_timeout: float,
    command_timeout: float,
    max_message_bytes: int,
    chunk_size: int,
    client_name: str | None,
    **connection_options: Any,
) -> Settings:
    """Validate the client options, then resolve the URL (which may start the embedded server).

    ``connection_options``: the credentials and TLS options of :func:`ferroq.connection.resolve`.
    """
    pool_size = check_count(pool_size, 'pool_size', 64)
    timeouts = []
    for name, value in (('connect_timeout', connect_timeout), ('command_timeout', command_timeout)):
        seconds = _seconds(value)
        if seconds is None or not 0 < seconds <= MAX_SECONDS:
            raise InvalidArgument(f'{name} must be a number of seconds > 0 and <= {MAX_SECONDS:.0f}, got {value!r}')
        timeouts.append(seconds)
    max_message_bytes = check_count(max_message_bytes, 'max_message_bytes', None)
    chunk_size = check_count(chunk_size, 'chunk_size')
    if client_name is not None and (not isinstance(client_name, str) or not re.fullmatch(r'[!-~]+', client_name)):
        raise InvalidArgument(f'client_name must be a non-empty str without spaces, got {client_name!r}')
    endpoint = connection.resolve(url, **connection_options)
    if not endpoint.url.startswith(_SCHEMES):
        raise InvalidArgument(
            f'invalid Redis URL "{endpoint.shown_url}": use redis://host:port/db or unix:///path/to/redis.sock'
        )
    return Settings(
        url=endpoint.url,
        shown_url=endpoint.shown_url,
        endpoint=endpoint,
        pool_size=pool_size,
        connect_timeout=timeouts[0],
        command_timeout=timeouts[1],
        max_message_bytes=max_message_bytes,
        chunk_size=chunk_size,
        client_name=client_name,
    )


def invalid_url(ctx: Settings, exc: Exception) -> InvalidArgument:
    """The error for a URL that redis-py could not parse."""
    return InvalidArgument(f'invalid Redis URL "{ctx.shown_url}": {scrub(ctx, str(exc))}')


def scrub(ctx: Settings, text: str) -> str:
    """``text`` with the URL and its password masked (redis-py messages may quote either)."""
    text = text.replace(ctx.url, ctx.shown_url)
    # A very short secret would mask unrelated text; redis-py never quotes the password anyway.
    for password in (_password(ctx.url), ctx.endpoint.password):
        if password and len(password) >= 4:
            text = text.replace(password, '***')
    return text


def _password(url: str) -> str | None:
    """The secret part of the user-info, as :func:`ferroq.server.redact_url` sees it."""
    userinfo, at, _ = url.partition('://')[2].partition('/')[0].rpartition('@')
    if not at:
        return None
    user, colon, password = userinfo.partition(':')
    return (password if colon else user) or None


# --- validation ----------------------------------------------------------------------------------


def check_topic(name: object, what: str = 'topic') -> str:
    """A topic name, or InvalidName; stream names follow the same rule (``what='stream'``)."""
    if not isinstance(name, str) or not _TOPIC_RE.fullmatch(name):
        raise InvalidName(f'invalid {what} name {name!r}: use 1-128 characters from A-Z a-z 0-9 _ . -')
    return name


def check_count(count: object, name: str = 'count', most: int | None = MAX_COUNT) -> int:
    """An int from 1 to ``most`` (no upper bound if None)."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1 or (most is not None and count > most):
        bounds = f'from 1 to {most}' if most is not None else '>= 1'
        raise InvalidArgument(f'{name} must be an int {bounds}, got {count!r}')
    return count


def _seconds(value: object) -> float | None:
    """``value`` as seconds if it is a finite int or float (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def check_lease(lease: object) -> int:
    """A lease in seconds; returns it in milliseconds as the scripts take it."""
    seconds = _seconds(lease)
    if seconds is None or not 0.001 <= seconds <= MAX_SECONDS:
        raise InvalidArgument(f'lease must be a number of seconds from 0.001 to {MAX_SECONDS:.0f}, got {lease!r}')
    return max(1, round(seconds * 1000))


def check_block(block: object) -> float | None:
    """None when the call must not wait, else the seconds to wait."""
    if block is None:
        return None
    seconds = _seconds(block)
    if seconds is None or not 0 <= seconds <= MAX_SECONDS:
        raise InvalidArgument(f'block must be None or a number of seconds from 0 to {MAX_SECONDS:.0f}, got {block!r}')
    return seconds or None


def check_flag(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidArgument(f'{name} must be a bool, got {value!r}')
    return value


def check_queue(queue: object) -> str:
    if not isinstance(queue, str) or queue not in ('backlog', 'nextlog'):
        raise InvalidArgument(f"queue must be 'backlog' or 'nextlog', got {queue!r}")
    return queue


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode())


def check_fields(fields: object, max_bytes: int, max_fields: int | None = None) -> list[str]:
    """Validate one message; returns its publish arguments ``[nfields, f1, v1, ...]`` (mapping order).

    ``max_fields``: the most fields a message may have (stream entries), checked before the fields themselves.
    """
    if not isinstance(fields, Mapping):
        raise InvalidMessage(f'a message must be a mapping of str to str, got {type(fields).__name__}')
    if not fields:
        raise InvalidMessage('a message must have at least one field')
    if max_fields is not None and len(fields) > max_fields:
        raise InvalidMessage(f'a message may have at most {max_fields} fields, got {len(fields)}')
    flat = [str(len(fields))]
    size = 0
    try:
        for key, value in fields.items():
            if not isinstance(key, str):
                raise InvalidMessage(f'message field names must be str, got {type(key).__name__}')
            if not key:
                raise InvalidMessage('message field names must be non-empty')
            if not isinstance(value, str):
                raise InvalidMessage(f'message field {key!r} must be a str, got {type(value).__name__}')
            size += _utf8_len(key) + _utf8_len(value)
            flat += (key, value)
    except UnicodeEncodeError:
        raise InvalidMessage('a message field is not valid Unicode (lone surrogate)') from None
    if size > max_bytes:
        raise MessageTooLarge(f'message is {size} bytes, more than max_message_bytes={max_bytes}')
    return flat


def _iterator(items: object, what: str) -> Iterator[Any]:
    if isinstance(items, (str, bytes, bytearray, Mapping, Message, StreamEntry)):
        raise InvalidArgument(f'{what} must be an iterable of items, not a single {type(items).__name__}')
    if not isinstance(items, Iterable):
        raise InvalidArgument(f'{what} must be an iterable, got {type(items).__name__}')
    return iter(items)


def _iterable(items: object, what: str) -> list[Any]:
    return list(_iterator(items, what))


def _checked(
    items: list[Any], max_bytes: int, start: int = 0, max_fields: int | None = None
) -> tuple[list[list[str]], list[tuple[int, FerroqError]]]:
    """The publish arguments of each message, and each bad one as (``start`` + its index, error)."""
    out: list[list[str]] = []
    errors: list[tuple[int, FerroqError]] = []
    for index, fields in enumerate(items, start):
        try:
            out.append(check_fields(fields, max_bytes, max_fields))
        except InvalidMessage as exc:
            errors.append((index, exc))
    return out, errors


def check_batch(messages: object, max_bytes: int, max_fields: int | None = None) -> list[list[str]]:
    """Validate every message of a batch; BatchError (listing each bad one) if any is invalid."""
    items = _iterable(messages, 'messages')
    out, errors = _checked(items, max_bytes, 0, max_fields)
    if errors:
        raise BatchError(f'{len(errors)} of {len(items)} messages are invalid; nothing was written', errors=errors)
    return out


def check_chunk(items: list[Any], max_bytes: int, start: int) -> list[list[str]]:
    """Validate one chunk of a stream; its BatchError names stream indexes (the Rust core words it the same)."""
    out, errors = _checked(items, max_bytes, start)
    if errors:
        raise BatchError(
            f'{len(errors)} of {len(items)} messages in the chunk from index {start} are invalid; '
            'nothing of that chunk was written',
            errors=errors,
        )
    return out


def check_id(msg_id: object) -> str:
    if not isinstance(msg_id, str) or not _ID_RE.fullmatch(msg_id):
        raise InvalidArgument(
            f'a message id must be a non-empty str of at most {MAX_ID_LENGTH} characters without whitespace, '
            f'got {msg_id!r}'
        )
    return msg_id


class Ref(NamedTuple):
    """A message to commit, extend or release: topic, id and fence (its claim's token; the delivery count of a
    Message without one, a claim of the previous layout; '' for a bare id)."""

    topic: str
    id: str
    fence: str


def _fence(msg: Message) -> str:
    return msg.claim or str(msg.deliveries)


def check_refs(messages: object, topic: str) -> list[Ref]:
    """Messages or bare ids of one topic (Topic.commit / extend / release)."""
    refs = []
    for item in _iterable(messages, 'messages'):
        if isinstance(item, Message):
            if item.topic != topic:
                raise InvalidArgument(f'message {item.id!r} was claimed from topic {item.topic!r}, not {topic!r}')
            refs.append(Ref(topic, check_id(item.id), _fence(item)))
        else:
            refs.append(Ref(topic, check_id(item), ''))
    return refs


def check_messages(messages: object) -> list[Ref]:
    """Messages of any topics (Client.commit / extend / release): bare ids have no topic, so they are refused."""
    refs = []
    for item in _iterable(messages, 'messages'):
        if not isinstance(item, Message):
            raise InvalidArgument(f'expected a Message, got {type(item).__name__} (use Topic methods for bare ids)')
        refs.append(Ref(check_topic(item.topic), check_id(item.id), _fence(item)))
    return refs


def check_owner(owner: object, required: bool = False) -> str:
    """A worker name (the owner of a processing list); '' for None unless ``required``."""
    if owner is None and not required:
        return ''
    if not isinstance(owner, str) or not _ID_RE.fullmatch(owner):
        raise InvalidArgument(
            f'owner must be a non-empty str of at most {MAX_ID_LENGTH} characters without whitespace, got {owner!r}'
        )
    return owner


def check_delay(delay: object) -> int:
    """A release delay in seconds; returns it in milliseconds (0: release now, else at least 1)."""
    seconds = _seconds(delay)
    if seconds is None or not 0 <= seconds <= MAX_SECONDS:
        raise InvalidArgument(f'delay must be a number of seconds from 0 to {MAX_SECONDS:.0f}, got {delay!r}')
    return max(1, round(seconds * 1000)) if seconds else 0


def check_dead_topic(topic: str, to: object, what: str = 'topic') -> str:
    """The dead-letter topic (or stream) of ``topic``: ``to``, or ``<topic>.dead``; never the topic itself."""
    name = check_topic(f'{topic}.dead' if to is None else to, what)
    if name == topic:
        raise InvalidArgument(f'a dead-letter {what} must differ from the {what} itself, got {name!r}')
    return name


def check_error(error: object) -> str:
    """The error text recorded with dead-lettered messages."""
    if not isinstance(error, str):
        raise InvalidArgument(f'error must be a str, got {type(error).__name__}')
    return error


def check_topics(topics: object) -> list[str]:
    if not isinstance(topics, (list, tuple)) or not topics:
        raise InvalidArgument(f'topics must be a non-empty list of topic names, got {topics!r}')
    return [check_topic(name) for name in topics]


# --- ids -----------------------------------------------------------------------------------------

_node: tuple[int, int] = (0, 0)  # (pid, node)


_CLAIM_CHARS = '0123456789abcdefghijklmnopqrstuvwxyz'


def new_claim_token() -> str:
    """A claim's token: a letter (so a script never reads it as a delivery count) and 15 random base-36 digits."""
    return random.choice(_CLAIM_CHARS[10:]) + ''.join(random.choices(_CLAIM_CHARS, k=15))


def new_id() -> str:
    """A new rfq id: uuid1 hex with a random multicast node, one per process (as rfq 1.2+)."""
    global _node
    pid = os.getpid()
    if _node[0] != pid:  # a forked child must not share its parent's node
        _node = (pid, random.getrandbits(48) | (1 << 40))
    return uuid.uuid1(node=_node[1]).hex


# --- keys ----------------------------------------------------------------------------------------


class TopicKeys(NamedTuple):
    name: str
    backlog: str
    nextlog: str
    leases: str
    deliveries: str
    delayed: str
    prefix: str
    claims: str
    claim_leases: str
    inflight: str

    @property
    def four(self) -> list[str]:
        """The keys every topic script takes first: backlog, nextlog, leases, deliveries."""
        return [self.backlog, self.nextlog, self.leases, self.deliveries]

    @property
    def five(self) -> list[str]:
        """The four topic keys and the delayed ZSET."""
        return [*self.four, self.delayed]

    @property
    def claim_keys(self) -> list[str]:
        """The claims HASH, the claims' leases and the in-flight SET."""
        return [self.claims, self.claim_leases, self.inflight]

    @property
    def eight(self) -> list[str]:
        """Every side key: what claim, release, harvest and stats take."""
        return [*self.five, *self.claim_keys]


def topic_keys(name: str) -> TopicKeys:
    """The keys of a topic (``name`` must be valid already)."""
    backlog, nextlog, leases, deliveries = keys.rfq_topic_keys(name)
    return TopicKeys(
        name,
        backlog,
        nextlog,
        leases,
        deliveries,
        keys.rfq_delayed(name),
        keys.rfq_message_prefix(name),
        keys.rfq_claims(name),
        keys.rfq_claim_leases(name),
        keys.rfq_inflight(name),
    )


def _eval(script: str, script_keys: Sequence[str], args: Sequence[str]) -> tuple[str, ...]:
    return ('EVALSHA', _SHA[script], str(len(script_keys)), *script_keys, *args)


# --- errors --------------------------------------------------------------------------------------

_CODES: dict[type[Exception], str] = {
    rex.NoScriptError: 'NOSCRIPT',
    rex.OutOfMemoryError: 'OOM',
    rex.NoPermissionError: 'NOPERM',
    rex.ReadOnlyError: 'READONLY',
    rex.ExecAbortError: 'EXECABORT',
    rex.BusyLoadingError: 'LOADING',
}


#: Redis's words when a script calls a command its ACL user may not run (``SCRIPT_NOPERM`` in src/errors.rs).
_SCRIPT_NOPERM = "user executing the script can't run this command"
#: Redis 6.2's wrapping of an error raised inside a script: ``Error running script (call to f_<sha1>):
#: @user_script:<line>: <error>``, where ``<error>`` is ``CODE detail`` (an error reply of ``redis.call``)
#: or ``@user_script: <line>: -CODE detail`` (an error Redis raised before running the command: OOM, NOPERM).
_SCRIPT_ERROR = re.compile(
    r'Error running script[^:]*\): (?:\s*@user_script: ?\d+:)*\s*-?([A-Z]+)(?: (.*))?$', re.DOTALL
)


def unwrap_script_error(text: str) -> tuple[str, str] | None:
    """``(code, message)`` of the error inside Redis 6.2's ``Error running script``, so the code is the same
    as on Redis 7 and Valkey; ``None`` for any other text, or a script error without a code (a Lua error).
    The native core does the same (``unwrap_script_error`` in src/errors.rs)."""
    m = _SCRIPT_ERROR.match(text.removeprefix('ERR '))
    return (m[1], f'{m[1]} {m[2]}' if m[2] else m[1]) if m else None


def _error_text(exc: rex.RedisError) -> tuple[str, str]:
    """(code, full message) of an error reply; redis-py strips the code of the errors it knows."""
    text = str(exc)
    code = getattr(exc, 'status_code', None) or _CODES.get(type(exc))
    if not code:
        first = text.split(' ', 1)[0]
        code = first if first.isupper() and first.isalpha() else 'ERR'
    if code == 'ERR' and (inner := unwrap_script_error(text)):
        return inner
    return code, text if text.startswith(code) else f'{code} {text}'


def map_error(exc: BaseException, ctx: Settings) -> FerroqError:
    """The ferroq exception for a redis-py one: the only place where redis-py errors are translated."""
    if isinstance(exc, FerroqError):
        return exc
    url = ctx.shown_url
    if isinstance(exc, (rex.AuthenticationError, rex.AuthorizationError)):
        return PermissionDenied(f'authentication to Redis at {url} failed (wrong user or password)')
    if isinstance(exc, rex.BusyLoadingError):
        return ConnectionFailed(f'Redis at {url} is loading its dataset')
    if isinstance(exc, rex.ConnectionError):
        text = scrub(ctx, str(exc))
        tls = tls_failure(text, ctx.endpoint)
        if tls is not None:
            return TlsError(f'TLS handshake with Redis at {url} failed: {tls} ({text})')
        return ConnectionFailed(f'connection to Redis at {url} failed: {text}')
    if isinstance(exc, rex.TimeoutError):
        return CommandTimeout(f'Redis at {url} did not answer in time')
    if isinstance(exc, rex.ResponseError):
        code, text = _error_text(exc)
        if code == 'OOM':
            return OutOfMemory(text)
        if code in ('NOPERM', 'NOAUTH', 'WRONGPASS') or _SCRIPT_NOPERM in text:
            return PermissionDenied(text)
        return ServerError(text, code)
    if isinstance(exc, rex.InvalidResponse):
        # A reply that is not RESP: redis-py's parsers (hiredis or not) raise this for nothing else, and a
        # Redis server never sends it (the Rust core words it the same: Error::not_redis).
        return ConnectionFailed(f'the server at {url} does not speak the Redis protocol (not a Redis server?)')
    if isinstance(exc, UnicodeDecodeError):
        return ProtocolError(f'unreadable reply from Redis at {url}: {exc}')
    if isinstance(exc, rex.RedisError):
        return ServerError(scrub(ctx, str(exc)), 'ERR')
    return FerroqError(f'{type(exc).__name__}: {exc}')


#: OpenSSL's words for a failed handshake -> what to fix (the same words as the native client's).
_TLS_REASONS = (
    (('unable to get local issuer', 'self-signed certificate', 'self signed certificate', 'unknown ca'),
     "the server's certificate is not signed by a trusted CA (give the CA with tls_ca_file)"),
    (('certificate has expired',), "the server's certificate has expired"),
    (('mismatch', 'not valid for'), "the server's certificate is not valid for this host name"),
    (('certificate is not yet valid',), "the server's certificate is not valid yet"),
    (('CERTIFICATE_REQUIRED', 'HANDSHAKE_FAILURE'),
     'the server requires a client certificate (give tls_cert_file and tls_key_file)'),
)  # fmt: skip


#: How redis-py reports a TLS connection the server closed (see :func:`tls_failure`).
_CLOSED_AFTER_HANDSHAKE = ('EOF occurred in violation of protocol', 'Connection reset by peer', 'Broken pipe')
_NO_CLIENT_CERTIFICATE = (
    'the server closed the connection (when it does so at every connect, it requires a client certificate: '
    'give tls_cert_file and tls_key_file)'
)


def tls_failure(text: str, endpoint: connection.Endpoint) -> str | None:
    """What went wrong in a TLS handshake that redis-py reported as ``text``; None when it is not TLS."""
    if not endpoint.tls:
        return None
    if '[SSL' in text:
        for words, reason in _TLS_REASONS:
            if any(w in text for w in words):
                return reason
        return 'the TLS handshake failed'
    if endpoint.tls_cert_file is None and any(w in text for w in _CLOSED_AFTER_HANDSHAKE):
        # TLS 1.3: the server checks the client's certificate after the client has finished its part of the
        # handshake, then closes; the client's first write may meet the close before the server's alert.
        return _NO_CLIENT_CERTIFICATE
    return None


def reply_error(ctx: Settings, what: str, reply: object) -> ProtocolError:
    return ProtocolError(f'unexpected reply to {what} from Redis at {ctx.shown_url}: {reply!r:.200}')


# --- sending, with the retry policy --------------------------------------------------------------


def send(
    ctx: Settings, commands: list[tuple[str, ...]], *, retry_drop: bool = False, raw: bool = False
) -> Plan[list[Any]]:
    """Run commands in one round trip (one Call, or a Pipe); returns their results in order.

    ``retry_drop``: the commands are safe to repeat, so run them again once after a dropped connection.
    ``raw``: replies keep their strings as bytes (values that may not be UTF-8).
    """
    commands = list(commands)  # a NOSCRIPT round may replace EVALSHA calls with EVAL
    results: list[Any] = [None] * len(commands)
    pending = list(range(len(commands)))
    loading_deadline: float | None = None
    dropped = False
    loads = 0
    while pending:
        batch = [commands[i] for i in pending]
        reply = yield Call(batch[0], raw) if len(batch) == 1 else Pipe(batch, raw)
        if isinstance(reply, BaseException) and not isinstance(reply, rex.ResponseError):
            if isinstance(reply, rex.BusyLoadingError):
                loading_deadline = yield from _wait_loading(ctx, loading_deadline)
                continue
            if retry_drop and not dropped and _is_drop(reply):
                dropped = True
                continue
            raise map_error(reply, ctx)
        replies = [reply] if len(batch) == 1 else reply
        if not isinstance(replies, list) or len(replies) != len(batch):
            raise reply_error(ctx, 'a pipeline', reply)
        again, missing, loading = [], set(), False
        for i, item in zip(pending, replies):
            if isinstance(item, rex.NoScriptError):
                again.append(i)
                missing.add(commands[i][1])
            elif isinstance(item, rex.BusyLoadingError):
                again.append(i)
                loading = True
            elif isinstance(item, BaseException):
                raise map_error(item, ctx)
            else:
                results[i] = item
        if missing:
            loads += 1
            if loads > 2:
                # The cache keeps being flushed (SCRIPT FLUSH in a loop?): send the source with EVAL, which
                # cannot meet NOSCRIPT, instead of loading once more.
                for i in again:
                    if commands[i][0] == 'EVALSHA':
                        commands[i] = ('EVAL', protocol.script_source(_SCRIPT_BY_SHA[commands[i][1]]), *commands[i][2:])
            else:
                yield from send(
                    ctx, [('SCRIPT', 'LOAD', protocol.script_source(_SCRIPT_BY_SHA[sha])) for sha in missing]
                )
        if loading:
            loading_deadline = yield from _wait_loading(ctx, loading_deadline)
        pending = again
    return results


def eviction_warning(shown_url: str, policy: str) -> str | None:
    """The warning for a server whose ``maxmemory-policy`` may evict queue keys (the twin of the Rust one)."""
    if policy == 'noeviction':
        return None
    return (
        f'Redis at {shown_url} has maxmemory-policy {policy}: when its memory is full it may evict queue keys, '
        'and an evicted message is lost without an error; set maxmemory-policy noeviction'
    )


#: The oldest supported ``redis_version`` (Valkey reports the Redis version it is compatible with, 7.2.4 for
#: Valkey 8). The twin of ``MINIMUM`` in src/server_version.rs, which says why.
MINIMUM_SERVER = (6, 2, 0)


def unsupported_server(shown_url: str, what: str) -> UnsupportedServer:
    major, minor, _ = MINIMUM_SERVER
    return UnsupportedServer(
        f'Redis at {shown_url} is {what}: ferroq needs Redis {major}.{minor} or later, or Valkey 7.2 or later'
    )


def check_server_version(shown_url: str, info: object) -> None:
    """Raises UnsupportedServer when ``INFO server`` (as redis-py parses it) shows a server that is too old;
    nothing when it is recent enough or shows no version (a proxy that hides it: then the scripts decide)."""
    if not isinstance(info, dict) or 'redis_version' not in info:
        return
    version = str(info['redis_version'])
    try:
        parts = [int(p) for p in version.split('.')[:3]]
    except ValueError:
        return
    if len(parts) >= 2 and tuple(parts + [0] * (3 - len(parts))) < MINIMUM_SERVER:
        own = info.get('valkey_version')
        raise unsupported_server(shown_url, f'{info["server_name"]} {own}' if own else f'Redis {version}')


def server_checks(ctx: Settings) -> Plan[str | None]:
    """Checks the server once per client: its version (raises UnsupportedServer), then its
    ``maxmemory-policy`` (see :func:`server_policy`)."""
    info = yield Call(('INFO', 'server'))
    if isinstance(info, BaseException) and _is_drop(info):
        raise map_error(info, ctx)  # not connected: the next call asks again
    check_server_version(ctx.shown_url, info)
    return (yield from server_policy(ctx))


def server_policy(ctx: Settings) -> Plan[str | None]:
    """The server's ``maxmemory-policy``: CONFIG GET, else INFO (a user without CONFIG); None if neither answers."""
    reply = yield Call(('CONFIG', 'GET', 'maxmemory-policy'))
    if isinstance(reply, dict) and reply:
        return str(next(iter(reply.values())))
    if isinstance(reply, list) and len(reply) == 2:
        return str(reply[1])
    info = yield Call(('INFO', 'memory'))
    if isinstance(info, BaseException) and _is_drop(info):
        raise map_error(info, ctx)  # not connected: the next call asks again
    if isinstance(info, dict) and 'maxmemory_policy' in info:
        return str(info['maxmemory_policy'])
    return None


def _is_drop(exc: BaseException) -> bool:
    return isinstance(exc, rex.ConnectionError) and not isinstance(
        exc, (rex.AuthenticationError, rex.AuthorizationError)
    )


def _wait_loading(ctx: Settings, deadline: float | None) -> Plan[float]:
    """Redis answered LOADING: wait a little, unless it has been loading for LOADING_WAIT seconds already."""
    now = time.monotonic()
    if deadline is None:
        deadline = now + LOADING_WAIT
    if now >= deadline:
        raise ConnectionFailed(f'Redis at {ctx.shown_url} is loading its dataset (still after {LOADING_WAIT:g} s)')
    yield Sleep(0.1)
    return deadline


def script(ctx: Settings, name: str, script_keys: Sequence[str], args: Sequence[str]) -> Plan[Any]:
    """One script call."""
    return (yield from send(ctx, [_eval(name, script_keys, args)]))[0]


# --- operations ----------------------------------------------------------------------------------


def ping(ctx: Settings) -> Plan[bool]:
    yield from send(ctx, [('PING',)])
    return True


def scan_keys(ctx: Settings, pattern: str, kind: str) -> Plan[list[str]]:
    """Every key matching ``pattern`` of Redis type ``kind``, in SCAN order (never KEYS, which blocks Redis)."""
    found: list[str] = []
    cursor = '0'
    for _ in range(10_000_000):  # a bound; SCAN ends long before on any real keyspace
        reply = (yield from send(ctx, [('SCAN', cursor, 'MATCH', pattern, 'COUNT', '1000', 'TYPE', kind)]))[0]
        try:
            cursor = str(reply[0])
            found += [str(key) for key in reply[1]]
        except (TypeError, IndexError, KeyError):
            raise reply_error(ctx, 'SCAN', reply) from None
        if cursor == '0':
            break
    return found


def topics(ctx: Settings) -> Plan[list[str]]:
    """Every topic with a backlog or nextlog (SCAN, never KEYS)."""
    names: set[str] = set()
    for pattern in (keys.rfq_backlog('*'), keys.rfq_nextlog('*')):
        for key in (yield from scan_keys(ctx, pattern, 'list')):
            names.add(key[len(keys.RFQ_PREFIX) : -len(':backlog')])
    return sorted(names)


def publish(ctx: Settings, topic: TopicKeys, fields: Mapping[str, str], front: bool) -> Plan[str]:
    flat = check_fields(fields, ctx.max_message_bytes)
    return (yield from _publish(ctx, topic, [flat], check_flag(front, 'front')))[0]


def publish_batch(
    ctx: Settings, topic: TopicKeys, messages: Iterable[Mapping[str, str]], front: bool
) -> Plan[list[str]]:
    items = check_batch(messages, ctx.max_message_bytes)
    front = check_flag(front, 'front')
    if not items:
        return []
    return (yield from _publish(ctx, topic, items, front))


def publish_stream(ctx: Settings, topic: TopicKeys, messages: Iterable[Mapping[str, str]]) -> Plan[int]:
    """Publish chunk by chunk, pulling ``chunk_size`` messages at a time: memory stays bounded.

    Each chunk is checked, then written as one watched transaction (:func:`write_chunk`). A ferroq error (a bad chunk, a failed
    call) gets ``published``: the messages of the chunks before it. The iterable's own errors pass unchanged.
    """
    source = _iterator(messages, 'messages')
    published = 0
    while True:
        items = list(itertools.islice(source, ctx.chunk_size))
        if not items:
            return published
        try:
            yield from _publish(ctx, topic, check_chunk(items, ctx.max_message_bytes, published), False)
        except FerroqError as exc:
            exc.published = published
            raise
        published += len(items)
        if len(items) < ctx.chunk_size:  # the iterator ended: it is not asked again
            return published


def _publish(ctx: Settings, topic: TopicKeys, items: list[list[str]], front: bool) -> Plan[list[str]]:
    ids = [new_id() for _ in items]
    chunks = [
        (ids[i : i + ctx.chunk_size], items[i : i + ctx.chunk_size]) for i in range(0, len(items), ctx.chunk_size)
    ]
    if front:  # the last chunk first: each chunk goes before everything waiting, so the batch stays in order
        chunks.reverse()
    for chunk_ids, flats in chunks:
        # The record is named after the chunk's first id, fresh for every call, and deleted once written.
        record = keys.rfq_published(topic.name, chunk_ids[0])
        hsets = [(topic.prefix + msg_id, flat[1:]) for msg_id, flat in zip(chunk_ids, flats)]
        yield from write_chunk(ctx, topic, record, keys.STREAM_PUBLISH_TOKEN_MS, front, chunk_ids, hsets, forget=True)
    return ids


#: Rounds of one chunk's watched transaction: each lost round means another call wrote the chunk's record between
#: this call's WATCH and its EXEC, and the next round reads what that call handled.
WATCH_ROUNDS = 16


def write_chunk(
    ctx: Settings,
    topic: TopicKeys,
    record: str,
    ttl_ms: int,
    front: bool,
    ids: list[str],
    hsets: Sequence[tuple[str, Sequence[str | bytes]]],
    *,
    forget: bool,
) -> Plan[int]:
    """Write one publish chunk at most once per ``record``, without Lua; returns how many messages it wrote.

    ``hsets``: per message, in input order, its key and field/value pairs. Each round is a :class:`Watched`:
    ``WATCH record`` + ``GET record`` (k: how many of the chunk's messages earlier calls with this record handled);
    if k < n, ``MULTI``, the HSETs of messages k+1..n, the push of their ids, ``SET record n PX ttl``, ``EXEC``.
    EXEC runs only if the record is unchanged since this round's WATCH, which preceded the GET that showed the
    chunk unwritten; else (nil) the next round reads the record again. So an attempt whose bytes reach Redis
    late, after a retry on a new connection wrote the chunk, either reads the record and stops or has its EXEC
    aborted by the retry's SET (see docs/protocol.md). The twin of the Rust ``rfq::write_chunk``.

    ``forget``: the record is this call's own (not a dedup key's), deleted once the chunk is known written: no
    attempt of the call comes after, and every earlier attempt watched the record before the SET that touched it.
    """
    n = len(ids)
    handled: list[int | None] = [None]

    def build(value: Any) -> list[tuple[str, ...]] | None:
        text = value.decode() if isinstance(value, bytes) else value
        done = 0 if text is None else int(text) if isinstance(text, str) and text.isdigit() else None
        handled[0] = done
        if done is None or done >= n:
            return None
        commands: list[tuple[Any, ...]] = [('HSET', key, *pairs) for key, pairs in hsets[done:]]
        # The backlog is consumed from its tail: LPUSH in input order, or (front) RPUSH in reverse order, so the
        # chunk is consumed next and still in input order.
        commands.append(
            ('RPUSH', topic.backlog, *reversed(ids[done:])) if front else ('LPUSH', topic.backlog, *ids[done:])
        )
        commands.append(('SET', record, str(n), 'PX', str(ttl_ms)))
        return commands

    loading_deadline: float | None = None
    dropped = False
    for _ in range(WATCH_ROUNDS):
        while True:
            reply = yield Watched(record, build, forget)
            if not isinstance(reply, BaseException):
                break
            if isinstance(reply, rex.BusyLoadingError):
                loading_deadline = yield from _wait_loading(ctx, loading_deadline)
            elif not dropped and _is_drop(reply):
                dropped = True  # safe to repeat: the next attempt starts from its own WATCH
            else:
                raise map_error(reply, ctx)
        if handled[0] is None:
            raise reply_error(ctx, f'GET {record}', 'not a count')
        if reply is None:
            continue  # the record changed since WATCH
        if not isinstance(reply, list):
            raise reply_error(ctx, 'EXEC', reply)
        for item in reply:
            if isinstance(item, BaseException):
                raise map_error(item, ctx)
        return n - handled[0] if reply else 0
    raise ServerError(
        f'ERR the publish record {record} kept changing under other writers ({WATCH_ROUNDS} rounds)', 'ERR'
    )


def claim(
    ctx: Settings, topic: TopicKeys, count: int, block: float | None, lease: float, owner: str | None
) -> Plan[list[Message]]:
    """Topic.claim."""
    args = check_count(count), check_block(block), check_lease(lease), check_owner(owner)
    return (yield from _claim(ctx, [topic], *args))


def claim_many(
    ctx: Settings, topics: Sequence[str], count: int, block: float | None, lease: float, owner: str | None
) -> Plan[list[Message]]:
    """Client.claim: several topics in priority order."""
    names = check_topics(topics)
    args = check_count(count), check_block(block), check_lease(lease), check_owner(owner)
    return (yield from _claim(ctx, [topic_keys(name) for name in names], *args))


def _claim(
    ctx: Settings, topics: list[TopicKeys], count: int, wait: float | None, lease_ms: int, owner: str
) -> Plan[list[Message]]:
    messages = yield from _claim_now(ctx, topics, count, lease_ms, '', owner)
    if messages or wait is None:
        return messages
    if len(topics) == 1:
        # Wait on the server: BLMOVE hands over the first id that arrives, then the script leases it.
        t = topics[0]
        moved = yield Block(
            ('BLMOVE', t.backlog, t.nextlog, 'RIGHT', 'LEFT', f'{max(wait, 0.001):.3f}'), wait + ctx.command_timeout
        )
        if isinstance(moved, BaseException):
            raise map_error(moved, ctx)
        if moved is None:
            return []
        if not isinstance(moved, str):
            raise reply_error(ctx, 'BLMOVE', moved)
        return (yield from _claim_now(ctx, topics, count, lease_ms, moved, owner))
    # Several topics: no blocking command can watch them in priority order, so poll with backoff.
    deadline = time.monotonic() + wait
    delay = 0.005
    for _ in range(int(wait / 0.005) + 2):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        yield Sleep(min(delay, remaining))
        delay = min(delay * 2, 0.1)
        messages = yield from _claim_now(ctx, topics, count, lease_ms, '', owner)
        if messages:
            return messages
    return []


def _claim_now(
    ctx: Settings, topics: list[TopicKeys], count: int, lease_ms: int, moved: str, owner: str
) -> Plan[list[Message]]:
    token = new_claim_token()
    script_keys = [k for t in topics for k in t.eight]
    reply = yield from script(ctx, 'rfq/claim-8n', script_keys, [str(count), str(lease_ms), moved, owner, token])
    return (yield from _with_bodies(ctx, 'rfq/claim-8n', topics, token, reply))


def claim_reply(reply: Any, ntopics: int) -> list[tuple[int, str, int]]:
    """(topic index, id, delivery count) of each message of a claim-8n (or resume-6) reply: ``now_ms``, then per
    topic ``topic_index, ids, n`` (the ids in one space-separated string) and n (position, delivery count)
    pairs for the ids claimed before. Strings may be bytes (a raw connection). Raises ValueError on any
    other shape."""

    def text(value: Any) -> str:
        return value.decode() if isinstance(value, bytes) else str(value)

    try:
        out: list[tuple[int, str, int]] = []
        items = iter(reply)
        next(items)  # now_ms
        for ti in items:
            topic = int(ti) - 1
            if not 0 <= topic < ntopics:
                raise ValueError(f'topic index {ti}')
            ids, n = text(next(items)).split(' '), int(next(items))
            counts = [1] * len(ids)
            for _ in range(n):
                at = int(next(items))
                if not 1 <= at <= len(ids):
                    raise ValueError(f'position {at}')
                counts[at - 1] = int(next(items))
            out += [(topic, i, d) for i, d in zip(ids, counts)]
        return out
    except (TypeError, IndexError, StopIteration):
        raise ValueError('cut short') from None


def _with_bodies(ctx: Settings, name: str, topics: list[TopicKeys], token: str, reply: Any) -> Plan[list[Message]]:
    """The messages of a claim-8n (or resume-6) reply (:func:`claim_reply`), with their bodies fetched in one
    pipeline. A message whose body is gone (committed or purged by someone else after its id was queued) is
    committed away, not returned."""
    try:
        held = [(topics[ti], msg_id, d) for ti, msg_id, d in claim_reply(reply, len(topics))]
    except ValueError:
        raise reply_error(ctx, name, reply) from None
    if not held:
        return []
    bodies = yield from send(ctx, [('HGETALL', t.prefix + i) for t, i, _ in held], retry_drop=True)
    out, ghosts = [], []
    for (topic, msg_id, deliveries), body in zip(held, bodies):
        if isinstance(body, list):
            body = _pairs(body)
        if not isinstance(body, dict):
            raise reply_error(ctx, 'HGETALL', body)
        if body:
            out.append(Message(msg_id, topic.name, body, deliveries, token))
        else:
            ghosts.append(Ref(topic.name, msg_id, token))
    if ghosts:
        yield from _fenced(ctx, 'commit', ghosts, 0)
    return out


def resume(ctx: Settings, topic: TopicKeys, owner: str, lease: float) -> Plan[list[Message]]:
    """Topic.resume: claim again, in place, what ``owner`` still holds."""
    name = check_owner(owner, required=True)
    lease_ms = check_lease(lease)
    token = new_claim_token()
    script_keys = [topic.nextlog, topic.leases, topic.deliveries, *topic.claim_keys]
    reply = yield from script(ctx, 'rfq/resume-6', script_keys, [name, str(lease_ms), token])
    return (yield from _with_bodies(ctx, 'rfq/resume-6', [topic], token, reply))


def _pairs(flat: list[T]) -> dict[T, T]:
    it = iter(flat)
    return dict(zip(it, it))


# commit, extend and release share their shape: per topic, chunks of (id, token) pairs, fenced.


def commit(ctx: Settings, topic: TopicKeys, messages: Iterable[Message | str]) -> Plan[list[str]]:
    return (yield from _fenced(ctx, 'commit', check_refs(messages, topic.name), 0))


def commit_many(ctx: Settings, messages: Iterable[Message]) -> Plan[list[str]]:
    return (yield from _fenced(ctx, 'commit', check_messages(messages), 0))


def extend(ctx: Settings, topic: TopicKeys, messages: Iterable[Message | str], lease: float) -> Plan[list[str]]:
    refs = check_refs(messages, topic.name)
    return (yield from _fenced(ctx, 'extend', refs, check_lease(lease)))


def extend_many(ctx: Settings, messages: Iterable[Message], lease: float) -> Plan[list[str]]:
    refs = check_messages(messages)
    return (yield from _fenced(ctx, 'extend', refs, check_lease(lease)))


def release(ctx: Settings, topic: TopicKeys, messages: Iterable[Message | str], delay: float) -> Plan[list[str]]:
    refs = check_refs(messages, topic.name)
    return (yield from _fenced(ctx, 'release', refs, check_delay(delay)))


def release_many(ctx: Settings, messages: Iterable[Message], delay: float) -> Plan[list[str]]:
    refs = check_messages(messages)
    return (yield from _fenced(ctx, 'release', refs, check_delay(delay)))


def dead_letter(
    ctx: Settings, topic: TopicKeys, messages: Iterable[Message | str], error: str, to: str | None
) -> Plan[list[str]]:
    """Topic.dead_letter: move held messages to the backlog of ``to`` (default ``<topic>.dead``)."""
    dead = topic_keys(check_dead_topic(topic.name, to))
    refs = check_refs(messages, topic.name)
    return (yield from _fenced(ctx, 'dead_letter', refs, 0, dead=dead, error=check_error(error)))


def _fenced(
    ctx: Settings, op: str, refs: list[Ref], ms: int, dead: TopicKeys | None = None, error: str = ''
) -> Plan[list[str]]:
    """Run commit / extend / release / dead_letter; returns the ids the scripts accepted, in input order.

    ``ms`` is the lease of extend and the delay of release.
    """
    if not refs:
        return []
    groups: dict[str, list[Ref]] = {}
    for ref in refs:
        groups.setdefault(ref.topic, []).append(ref)
    calls: list[tuple[str, ...]] = []
    spans: list[tuple[str, int, int]] = []  # (topic, first call, end) of each topic's calls
    for name, group in groups.items():
        t = topic_keys(name)
        chunks = [group[i : i + ctx.chunk_size] for i in range(0, len(group), ctx.chunk_size)]
        if op == 'release':  # each chunk goes to the consume end: the last chunk first keeps input order
            chunks.reverse()
        first = len(calls)
        calls += [_fenced_call(op, t, chunk, ms, dead, error) for chunk in chunks]
        spans.append((name, first, len(calls)))
    # commit and extend are fenced and repeatable; a repeated release or dead-letter would report nothing done.
    replies = yield from send(ctx, calls, retry_drop=op in ('commit', 'extend'))
    done: dict[str, list[str]] = {}
    for name, first, end in spans:
        part = replies[first:end]
        if op == 'release':
            part.reverse()
        if not all(isinstance(r, list) for r in part):
            raise reply_error(ctx, f'rfq/{op}', part)
        if op == 'commit':  # { committed, then the ids given that were not }: the rest, in input order
            refused = {msg_id for r in part for msg_id in r[1:]}
            done[name] = list(dict.fromkeys(ref.id for ref in groups[name] if ref.id not in refused))
            if len(done[name]) != sum(int(r[0]) for r in part):
                raise reply_error(ctx, 'rfq/commit-6n', part)
        else:
            done[name] = [msg_id for r in part for msg_id in r]
    # Each script returns an in-order subsequence of its input: walk the input to merge them back.
    out = []
    position = dict.fromkeys(done, 0)
    for ref in refs:
        accepted, i = done[ref.topic], position[ref.topic]
        if i < len(accepted) and accepted[i] == ref.id:
            out.append(ref.id)
            position[ref.topic] = i + 1
    return out


def _fenced_call(
    op: str, t: TopicKeys, chunk: list[Ref], ms: int, dead: TopicKeys | None, error: str
) -> tuple[str, ...]:
    """The script call of one chunk of commit / extend / release / dead_letter (see :func:`_fenced`)."""
    if op == 'commit':  # the ids are the rest of their message keys: not sent twice
        script_keys = [t.nextlog, t.leases, t.deliveries, *t.claim_keys, *(t.prefix + r.id for r in chunk)]
        return _eval('rfq/commit-6n', script_keys, [str(len(t.prefix)), *_groups(chunk, False)])
    if op == 'extend':
        return _eval('rfq/extend-5', [t.leases, t.deliveries, *t.claim_keys], [str(ms), *_groups(chunk)])
    if op == 'release':
        return _eval('rfq/release-8', t.eight, [str(ms), *_groups(chunk)])
    assert dead is not None
    moved = [k for r in chunk for k in (t.prefix + r.id, dead.prefix + r.id)]
    script_keys = [t.nextlog, t.leases, t.deliveries, dead.backlog, dead.deliveries, *t.claim_keys, *moved]
    return _eval('rfq/dead_letter-8n', script_keys, [error, *_groups(chunk)])


def _groups(refs: list[Ref], with_ids: bool = True) -> list[str]:
    """The fence groups of a fenced script's arguments: per run of refs with one fence, ``fence, k`` and (with
    ``with_ids``) the k ids."""
    out: list[str] = []
    for fence, run in itertools.groupby(refs, key=lambda r: r.fence):
        ids = [r.id for r in run]
        out += [fence, str(len(ids)), *(ids if with_ids else ())]
    return out


def harvest(ctx: Settings, topic: TopicKeys, all: bool, lease: float) -> Plan[list[str]]:
    lease_ms = check_lease(lease)
    if check_flag(all, 'all'):
        reply = yield from script(ctx, 'rfq/harvest_all-7', [*topic.four, *topic.claim_keys], [])
        if not isinstance(reply, list):
            raise reply_error(ctx, 'rfq/harvest_all-7', reply)
        return reply
    out: list[str] = []
    for _ in range(10_000):
        reply = yield from script(ctx, 'rfq/harvest-8', topic.eight, [str(lease_ms), str(STEP)])
        try:
            out += reply[0]
            handled = int(reply[1])
        except (TypeError, ValueError, IndexError):
            raise reply_error(ctx, 'rfq/harvest-8', reply) from None
        if handled < STEP:
            break
    return out


def peek(ctx: Settings, topic: TopicKeys, msg_id: str) -> Plan[dict[str, str] | None]:
    key = topic.prefix + check_id(msg_id)
    reply = (yield from send(ctx, [('HGETALL', key)]))[0]
    if isinstance(reply, list):
        reply = _pairs(reply)
    if not isinstance(reply, dict):
        raise reply_error(ctx, 'HGETALL', reply)
    return reply or None


def check_field_names(fields: object, reserved: tuple[str, ...]) -> list[str]:
    """The field names of an Arrow read: distinct str, none of them one of the batch's own columns."""
    names: list[str] = []
    for name in _iterator(fields, 'fields'):
        if not isinstance(name, str) or not _encodes(name):
            raise InvalidArgument(f'a field name must be a str, got {name!r}')
        if name in reserved or name in names:
            raise InvalidArgument(
                f'field name {name!r} is repeated or is a column of the batch already ({", ".join(reserved)})'
            )
        names.append(name)
    return names


def _encodes(text: str) -> bool:
    """Whether ``text`` is valid Unicode (no lone surrogate), so it has a UTF-8 form."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def record_count(record: bytes | None) -> int:
    """The delivery count at the head of a message's record (``<count>[ ...]``), 0 if it has none."""
    if not record:
        return 0
    head = record.split(b'\n', 1)[0].split(b' ', 1)[0]
    return int(head) if head.isdigit() else 0


def arrow_batch(ids: list[str], columns: dict[str, list[Any]], deliveries: list[int] | None = None) -> Any:
    """``_id`` (utf8), ``_deliveries`` (int64) if given, then the binary ``columns``: a pyarrow RecordBatch."""
    import pyarrow as pa

    arrays = [pa.array(ids, pa.utf8())]
    names = ['_id']
    if deliveries is not None:
        arrays.append(pa.array(deliveries, pa.int64()))
        names.append('_deliveries')
    arrays += [pa.array(values, pa.binary()) for values in columns.values()]
    return pa.RecordBatch.from_arrays(arrays, names=names + list(columns))


def fetch_arrow(ctx: Settings, topic: TopicKeys, ids: object, fields: object) -> Plan[Any]:
    """Topic.fetch_arrow: bodies (HGETALL) and delivery counts (HMGET) in rounds of ``chunk_size`` ids."""
    import pyarrow  # noqa: F401  (before any I/O: without pyarrow the call fails at once)

    wanted = [check_id(i) for i in _iterator(ids, 'ids')]
    columns: dict[str, list[Any]] = {name: [] for name in check_field_names(fields, ('_id', '_deliveries'))}
    found: list[str] = []
    counts: list[int] = []
    for lo in range(0, len(wanted), ctx.chunk_size):
        chunk = wanted[lo : lo + ctx.chunk_size]
        commands: list[tuple[str, ...]] = [('HGETALL', topic.prefix + i) for i in chunk]
        commands += [('HMGET', topic.deliveries, *chunk), ('SMISMEMBER', topic.inflight, *chunk)]
        *bodies, records, held = yield from send(ctx, commands, retry_drop=True, raw=True)
        if not isinstance(records, list) or len(records) != len(chunk):
            raise reply_error(ctx, 'HMGET', records)
        if not isinstance(held, list) or len(held) != len(chunk):
            raise reply_error(ctx, 'SMISMEMBER', held)
        for msg_id, body, record, in_flight in zip(chunk, bodies, records, held):
            if isinstance(body, list):
                body = _pairs(body)
            if not isinstance(body, dict):
                raise reply_error(ctx, 'HGETALL', body)
            if not body:
                continue  # committed (or never published): left out
            found.append(msg_id)
            counts.append(record_count(record) + (1 if in_flight else 0))
            for name, values in columns.items():
                values.append(body.get(name.encode()))
    return arrow_batch(found, columns, counts)


def _ms(value: object) -> datetime | None:
    if value is None or value is False:
        return None
    return datetime.fromtimestamp(float(str(value)) / 1000, timezone.utc)


def inspect(ctx: Settings, topic: TopicKeys, queue: str, start: int, count: int) -> Plan[list[InspectEntry]]:
    queue = check_queue(queue)
    if isinstance(start, bool) or not isinstance(start, int) or start < 0:
        raise InvalidArgument(f'start must be an int >= 0, got {start!r}')
    count = check_count(count)
    if start >= 2**32:  # longer than any Redis list can be
        return []
    lst = topic.backlog if queue == 'backlog' else topic.nextlog
    script_keys = [lst, topic.leases, topic.deliveries, topic.claims, topic.claim_leases]
    reply = yield from script(ctx, 'rfq/inspect-5', script_keys, [str(start), str(count), topic.prefix])
    try:
        return [
            InspectEntry(
                id=msg_id,
                fields=_pairs(body) or None,
                deliveries=int(deliveries) if deliveries else 0,
                claimed_at=_ms(claimed_at),
                lease_deadline=_ms(deadline),
                owner=owner if isinstance(owner, str) else None,
                error=error if isinstance(error, str) else None,
            )
            for msg_id, deliveries, claimed_at, deadline, body, owner, error in reply[1]
        ]
    except (TypeError, ValueError, IndexError, OverflowError):
        raise reply_error(ctx, 'rfq/inspect-5', reply) from None


def stats(ctx: Settings, topic: TopicKeys) -> Plan[TopicStats]:
    reply = yield from script(ctx, 'rfq/stats-8', topic.eight, [])
    try:
        now_ms, backlog, nextlog, leased, expired, oldest_backlog, oldest_nextlog, delayed = reply
        stamps = [published_at(i) for i in (oldest_backlog, oldest_nextlog) if isinstance(i, str)]
        times = [s.timestamp() for s in stamps if s is not None]
        # ids are stamped by the producer's clock, now by Redis: never report a negative age
        age = max(0.0, int(now_ms) / 1000 - min(times)) if times else None
        return TopicStats(topic.name, int(backlog), int(nextlog), int(leased), int(expired), age, int(delayed))
    except (TypeError, ValueError):
        raise reply_error(ctx, 'rfq/stats-8', reply) from None


def purge(ctx: Settings, topic: TopicKeys, queue: str) -> Plan[int]:
    queue = check_queue(queue)
    lst = topic.backlog if queue == 'backlog' else topic.nextlog
    total = 0
    for _ in range(10_000_000):  # a bound: 10^10 messages
        script_keys = [lst, topic.leases, topic.deliveries, *topic.claim_keys]
        reply = yield from script(ctx, 'rfq/purge-6', script_keys, [topic.prefix, str(STEP)])
        if not isinstance(reply, int):
            raise reply_error(ctx, 'rfq/purge-6', reply)
        total += reply
        if reply < STEP:
            break
    return total
