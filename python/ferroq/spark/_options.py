"""The options of the ``ferroq`` Spark data source: every one listed once here, checked on the driver.

Spark hands a data source its options as strings in a case-insensitive map. :func:`parse` checks them all
when a read or write is planned, before any task starts, and turns them into small frozen values that are
pickled to the executors. Nothing here imports pyspark, so the rules are tested without a JVM.

Secrets: a password never appears in a repr, a log line or an error. Put it in the ``password`` option
(Spark redacts option keys matching ``spark.redaction.regex`` in plans) or in ``FERROQ_URL``; a password
inside ``url`` works too but Spark shows that option's value in ``explain()`` output.
"""

from __future__ import annotations

import difflib
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import quote

from ferroq._limits import MAX_DEDUP_TTL, MAX_POOL_SIZE, MAX_RSMQ_SECONDS, MAX_SECONDS
from ferroq.connection import resolve as resolve_connection
from ferroq.exceptions import InvalidArgument
from ferroq.server import redact_url

__all__ = ['OPTIONS', 'Connection', 'Mode', 'Plan', 'Target', 'parse']

Mode = Literal['read', 'write', 'stream_read', 'stream_write']
#: ``schema``: only the target and the connection, to sample a queue for a default schema (the reader that
#: follows checks every option).
ParseMode = Literal['read', 'write', 'stream_read', 'stream_write', 'schema']
Kind = Literal['topic', 'rsmq', 'stream']

_WRITES: frozenset[str] = frozenset({'write', 'stream_write'})
_READS: frozenset[str] = frozenset({'read', 'stream_read'})
_ALL_MODES: frozenset[str] = _WRITES | _READS
_ALL_KINDS: frozenset[str] = frozenset({'topic', 'rsmq', 'stream'})


@dataclass(frozen=True)
class Option:
    """One option: where it applies and what it does (the README's options table is made from these)."""

    name: str
    modes: frozenset[str]
    kinds: frozenset[str]
    default: str
    help: str


def _opt(name: str, modes: frozenset[str], kinds: frozenset[str], default: str, text: str) -> Option:
    return Option(name, modes, kinds, default, text)


_TOPIC, _RSMQ, _STREAM = frozenset({'topic'}), frozenset({'rsmq'}), frozenset({'stream'})

#: Every option the source knows, in the order of the README's table.
OPTIONS: tuple[Option, ...] = (
    _opt('topic', _ALL_MODES, _ALL_KINDS, '', 'an rfq topic: the target (exactly one of topic, rsmq, stream)'),
    _opt('rsmq', _ALL_MODES, _ALL_KINDS, '', 'an RSMQ queue: the target (batch reads and writes)'),
    _opt('stream', _ALL_MODES, _ALL_KINDS, '', 'a Streams topic: the target'),
    _opt('ns', _ALL_MODES, _RSMQ, 'rsmq', 'the RSMQ namespace'),
    _opt('url', _ALL_MODES, _ALL_KINDS, 'FERROQ_URL', 'the Redis URL (redis://, rediss://, unix://)'),
    _opt('username', _ALL_MODES, _ALL_KINDS, '', 'the Redis ACL user, added to url'),
    _opt('password', _ALL_MODES, _ALL_KINDS, '', 'the Redis password, added to url (redacted in plans)'),
    _opt('password_file', _ALL_MODES, _ALL_KINDS, '', 'a file holding the password, read on the driver'),
    _opt('tls_ca_file', _ALL_MODES, _ALL_KINDS, '', 'rediss://: PEM CA of the server certificate (path on every node)'),
    _opt(
        'tls_cert_file', _ALL_MODES, _ALL_KINDS, '', 'rediss://: PEM client certificate for mTLS (path on every node)'
    ),
    _opt(
        'tls_key_file', _ALL_MODES, _ALL_KINDS, '', 'rediss://: PEM key of the client certificate (path on every node)'
    ),
    _opt('tls_insecure_skip_verify', _ALL_MODES, _ALL_KINDS, 'false', 'DANGER: no server certificate or host check'),
    _opt('pool_size', _ALL_MODES, _ALL_KINDS, '2', 'connections per Python worker process'),
    _opt('chunk_size', _ALL_MODES, _ALL_KINDS, '1000', 'messages per atomic script call'),
    _opt('connect_timeout', _ALL_MODES, _ALL_KINDS, '5', 'seconds'),
    _opt('command_timeout', _ALL_MODES, _ALL_KINDS, '10', 'seconds'),
    _opt('max_message_bytes', _ALL_MODES, _ALL_KINDS, '1048576', 'the largest message a writer accepts'),
    _opt('valueColumn', _WRITES, _ALL_KINDS, '', 'publish this string/binary column alone (RSMQ: as the body)'),
    _opt('idColumn', _WRITES, _TOPIC, '', 'message ids from this column (insert-if-absent across jobs)'),
    _opt('dedupTtl', _WRITES, _ALL_KINDS, '86400', 'seconds a chunk marker (and an atomic stage) is kept'),
    _opt('atomic', frozenset({'write'}), _ALL_KINDS, 'false', 'publish nothing unless the whole job commits'),
    _opt('sinkId', frozenset({'stream_write'}), _ALL_KINDS, '', 'a stable name: replayed micro-batches publish once'),
    _opt('delay', _WRITES, _RSMQ, "the queue's", 'seconds before a sent message is receivable'),
    _opt('maxlen', _WRITES, _STREAM, '', 'trim the stream to about this many entries after each chunk'),
    _opt('maxAge', _WRITES, _STREAM, '', 'trim entries older than this many seconds after each chunk'),
    _opt('approximate', _WRITES, _STREAM, 'true', 'trim whole macro-nodes (cheap) rather than exactly'),
    _opt('startingPosition', _READS, _STREAM, 'earliest', 'earliest, latest, an entry id or an ISO-8601 time'),
    _opt('endingPosition', frozenset({'read'}), _STREAM, 'latest', 'latest, an entry id or an ISO-8601 time'),
    _opt('numPartitions', _READS, _ALL_KINDS, '4', 'partitions a read (or a micro-batch) is split into'),
    _opt(
        'group',
        _READS,
        _STREAM,
        'spark (streaming)',
        'streaming: the consumer group acknowledged on commit; batch: `_deliveries` from its pending entries',
    ),
    _opt('consumer', frozenset({'stream_read'}), _TOPIC | _STREAM, 'spark', 'who claims; one live query each'),
    _opt('maxRecordsPerTrigger', frozenset({'stream_read'}), _TOPIC | _STREAM, '', 'messages per micro-batch'),
    _opt('failOnDataLoss', frozenset({'stream_read'}), _STREAM, 'true', 'fail when unread entries were trimmed'),
    _opt('claimTtl', frozenset({'stream_read'}), _TOPIC, '86400', 'lease of claimed messages, renewed each poll'),
)
_BY_KEY = {o.name.lower(): o for o in OPTIONS}
#: Options Spark itself reads and also hands to the source (``writeStream.option('checkpointLocation', ...)``).
SPARK_OWN = frozenset({'checkpointlocation', 'path', 'paths'})


@dataclass(frozen=True)
class Connection:
    """Where to connect and the client options; ``url`` holds any password, so it is left out of the repr."""

    url: str = field(repr=False)
    shown_url: str
    pool_size: int = 2
    chunk_size: int = 1000
    connect_timeout: float = 5.0
    command_timeout: float = 10.0
    max_message_bytes: int = 1048576
    tls_ca_file: str | None = None
    tls_cert_file: str | None = None
    tls_key_file: str | None = None
    tls_insecure_skip_verify: bool = False

    def client_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``ferroq.Client`` (and ``ferroq.pure.Client``) for this connection."""
        return {
            'pool_size': self.pool_size,
            'chunk_size': self.chunk_size,
            'connect_timeout': self.connect_timeout,
            'command_timeout': self.command_timeout,
            'max_message_bytes': self.max_message_bytes,
            'tls_ca_file': self.tls_ca_file,
            'tls_cert_file': self.tls_cert_file,
            'tls_key_file': self.tls_key_file,
            'tls_insecure_skip_verify': self.tls_insecure_skip_verify,
        }


@dataclass(frozen=True)
class Target:
    """The queue a read or write uses."""

    kind: Kind
    name: str
    ns: str = 'rsmq'

    def __str__(self) -> str:
        if self.kind == 'rsmq':
            return f'RSMQ queue {self.ns}:{self.name}'
        return f'{"Streams topic" if self.kind == "stream" else "topic"} {self.name}'


@dataclass(frozen=True)
class Plan:
    """Every checked option of one read or write; picklable, no secret in its repr."""

    mode: Mode
    target: Target
    connection: Connection
    value_column: str | None = None
    id_column: str | None = None
    dedup_ttl: float = 86400.0
    atomic: bool = False
    sink_id: str | None = None
    delay: float | None = None
    maxlen: int | None = None
    max_age: float | None = None
    approximate: bool = True
    starting_position: str = 'earliest'
    ending_position: str = 'latest'
    num_partitions: int = 4
    group: str | None = None  # batch reads: none unless given
    consumer: str = 'spark'
    max_records_per_trigger: int | None = None
    fail_on_data_loss: bool = True
    claim_ttl: float = 86400.0


def parse(options: Mapping[str, str], mode: ParseMode) -> Plan:
    """Checks ``options`` for a ``mode`` read or write and returns the plan.

    Raises:
        InvalidArgument: an unknown option, one that does not apply to this mode or target, a missing or
            conflicting target, a bad value. The message names the option and never shows a password.
    """
    given = {k.lower(): v for k, v in options.items() if v is not None and k.lower() not in SPARK_OWN}
    if mode == 'schema':
        return Plan(mode='read', target=_target(given, 'read'), connection=_connection(given))
    for key in given:
        _known(key, mode)
    target = _target(given, mode)
    for key in given:
        opt = _BY_KEY[key]
        if target.kind not in opt.kinds:
            raise InvalidArgument(
                f'option {opt.name} does not apply to a{"n" if target.kind == "rsmq" else ""} {target}'
            )
    connection = _connection(given)
    value_column = _name(given, 'valueColumn')
    id_column = _name(given, 'idColumn')
    if value_column is not None and value_column == id_column:
        raise InvalidArgument('options valueColumn and idColumn name the same column')
    maxlen, max_age = _int(given, 'maxlen', 1, None), _seconds(given, 'maxAge', None, MAX_DEDUP_TTL * 12)
    if mode == 'read' and given.get('startingposition', '').strip().lower() == 'latest':
        raise InvalidArgument('option startingPosition of a batch read must be earliest, an entry id or a time')
    if maxlen is not None and max_age is not None:
        raise InvalidArgument('options maxlen and maxAge conflict: give one retention rule')
    plan = Plan(
        mode=mode,
        target=target,
        connection=connection,
        value_column=value_column,
        id_column=id_column,
        dedup_ttl=_seconds(given, 'dedupTtl', 86400.0, MAX_DEDUP_TTL) or 86400.0,
        atomic=_bool(given, 'atomic', False),
        sink_id=_word(given, 'sinkId'),
        delay=_seconds(given, 'delay', None, MAX_RSMQ_SECONDS, zero=True),
        maxlen=maxlen,
        max_age=max_age,
        approximate=_bool(given, 'approximate', True),
        starting_position=_position(given, 'startingPosition', 'earliest', mode),
        ending_position=_position(given, 'endingPosition', 'latest', mode),
        num_partitions=_int(given, 'numPartitions', 1, 10_000) or 4,
        group=_word(given, 'group') or ('spark' if mode == 'stream_read' else None),
        consumer=_word(given, 'consumer') or 'spark',
        max_records_per_trigger=_int(given, 'maxRecordsPerTrigger', 1, 100_000_000),
        fail_on_data_loss=_bool(given, 'failOnDataLoss', True),
        claim_ttl=_seconds(given, 'claimTtl', 86400.0, MAX_SECONDS) or 86400.0,
    )
    return plan


# --- the checks, one per kind of value ----------------------------------------------------------------

_MODE_WORDS = {'read': 'batch reads', 'write': 'batch writes', 'stream_read': 'streaming reads'}
_MODE_WORDS['stream_write'] = 'streaming writes'


def _known(key: str, mode: Mode) -> None:
    opt = _BY_KEY.get(key)
    if opt is None:
        close = difflib.get_close_matches(key, list(_BY_KEY), n=1, cutoff=0.6)
        hint = f'; did you mean {_BY_KEY[close[0]].name}?' if close else ''
        known = ', '.join(o.name for o in OPTIONS)
        raise InvalidArgument(f'unknown option {key!r} for the ferroq data source{hint} (known: {known})')
    if mode not in opt.modes:
        raise InvalidArgument(f'option {opt.name} does not apply to {_MODE_WORDS[mode]}')


def _target(given: Mapping[str, str], mode: Mode) -> Target:
    named = [k for k in ('topic', 'rsmq', 'stream') if k in given]
    if not named:
        raise InvalidArgument('name the queue: give exactly one of the options topic, rsmq or stream')
    if len(named) > 1:
        raise InvalidArgument(f'options {" and ".join(named)} conflict: give exactly one of topic, rsmq or stream')
    kind: Kind = named[0]  # type: ignore[assignment]
    name = given[kind]
    if kind == 'rsmq' and mode == 'stream_read':
        raise InvalidArgument('streaming reads take a topic or a stream; read an RSMQ queue with spark.read')
    if 'ns' in given and kind != 'rsmq':
        raise InvalidArgument('option ns applies to an RSMQ queue (rsmq=...) only')
    # The native client's own checks, so names are refused with the client's messages, and no I/O is done.
    import ferroq

    client = ferroq.Client('redis://127.0.0.1:1/0')
    ns = given.get('ns', 'rsmq')
    if kind == 'topic':
        client.topic(name)
    elif kind == 'stream':
        client.stream(name)
    else:
        client.rsmq(name, ns=ns)
    return Target(kind, name, ns)


def _connection(given: Mapping[str, str]) -> Connection:
    url = given.get('url') or os.environ.get('FERROQ_URL')
    if not url:
        raise InvalidArgument(
            'option url is required (or FERROQ_URL in the environment of the Spark driver): '
            'executors must all reach the same Redis, e.g. redis://host:6379/0'
        )
    shown = redact_url(url)
    username, password = given.get('username'), given.get('password')
    password_file = given.get('password_file')
    if password_file is not None:
        if password is not None:
            raise InvalidArgument('options password and password_file conflict: give one')
        # Read here, on the driver, so executors need no copy of the file (the plan carries it, unshown).
        password = resolve_connection('redis://127.0.0.1:1/0', password_file=password_file).password
    if username is not None or password is not None:
        scheme, sep, rest = url.partition('://')
        if scheme not in ('redis', 'rediss') or not sep:
            raise InvalidArgument(f'options username and password need a redis:// or rediss:// url, got {shown!r}')
        if '@' in rest.split('/', 1)[0]:
            raise InvalidArgument(f'url {shown!r} has credentials already: drop the username and password options')
        userinfo = quote(username or '', safe='') + (':' + quote(password, safe='') if password is not None else '')
        url = f'{scheme}://{userinfo}@{rest}'
        shown = redact_url(url)
    import ferroq

    connection = Connection(
        url=url,
        shown_url=shown,
        pool_size=_int(given, 'pool_size', 1, MAX_POOL_SIZE) or 2,
        chunk_size=_int(given, 'chunk_size', 1, 100_000) or 1000,
        connect_timeout=_seconds(given, 'connect_timeout', 5.0, 3600) or 5.0,
        command_timeout=_seconds(given, 'command_timeout', 10.0, 3600) or 10.0,
        max_message_bytes=_int(given, 'max_message_bytes', 1, 512 * 1024 * 1024) or 1048576,
        tls_ca_file=given.get('tls_ca_file') or None,
        tls_cert_file=given.get('tls_cert_file') or None,
        tls_key_file=given.get('tls_key_file') or None,
        tls_insecure_skip_verify=_bool(given, 'tls_insecure_skip_verify', False),
    )
    # The client checks the URL's form the same way it would on an executor; it connects on first use only.
    ferroq.Client(url, **connection.client_kwargs())
    return connection


def _int(given: Mapping[str, str], name: str, low: int, high: int | None) -> int | None:
    text = given.get(name.lower())
    if text is None:
        return None
    try:
        value = int(text.strip())
    except ValueError:
        value = None
    if value is None or value < low or (high is not None and value > high):
        limit = f'{low}..{high}' if high is not None else f'>= {low}'
        raise InvalidArgument(f'option {name} must be an integer {limit}, got {text!r}') from None
    return value


def _seconds(
    given: Mapping[str, str], name: str, default: float | None, high: float, zero: bool = False
) -> float | None:
    text = given.get(name.lower())
    if text is None:
        return default
    try:
        value = float(text.strip())
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and (value >= 0 if zero else value > 0) and value <= high):
        low = '>= 0' if zero else '> 0'
        raise InvalidArgument(f'option {name} must be a number of seconds {low} and <= {high:g}, got {text!r}')
    return value


def _bool(given: Mapping[str, str], name: str, default: bool) -> bool:
    text = given.get(name.lower())
    if text is None:
        return default
    value = text.strip().lower()
    if value not in ('true', 'false'):
        raise InvalidArgument(f'option {name} must be true or false, got {text!r}')
    return value == 'true'


_WORD = re.compile(r'[A-Za-z0-9_.:-]{1,128}')


def _word(given: Mapping[str, str], name: str) -> str | None:
    text = given.get(name.lower())
    if text is None:
        return None
    if not _WORD.fullmatch(text):
        raise InvalidArgument(f'option {name} must be 1-128 characters from A-Z a-z 0-9 _ . : -, got {text!r}')
    return text


def _name(given: Mapping[str, str], name: str) -> str | None:
    text = given.get(name.lower())
    if text is not None and not text:
        raise InvalidArgument(f'option {name} must name a column, got an empty string')
    return text


_STREAM_ID = re.compile(r'\d{1,20}(-\d{1,20})?')


def _position(given: Mapping[str, str], name: str, default: str, mode: Mode) -> str:
    text = given.get(name.lower())
    if text is None:
        return default
    value = text.strip()
    if value.lower() in ('earliest', 'latest'):
        if name == 'endingPosition' and value.lower() == 'earliest':
            raise InvalidArgument('option endingPosition must be latest, an entry id or a time, got earliest')
        return value.lower()
    if _STREAM_ID.fullmatch(value):
        return value
    from datetime import datetime

    try:
        datetime.fromisoformat(value)
    except ValueError:
        raise InvalidArgument(
            f'option {name} must be earliest, latest, an entry id (<ms>-<seq>) or an ISO-8601 time, got {text!r}'
        ) from None
    return value


def options_table() -> str:
    """The README's options table (between ``<!-- spark-options -->`` markers; a test keeps them equal)."""
    words = {'read': 'read', 'write': 'write', 'stream_read': 'readStream', 'stream_write': 'writeStream'}
    lines = ['| option | default | applies to | meaning |', '|---|---|---|---|']
    for o in OPTIONS:
        modes = ', '.join(w for m, w in words.items() if m in o.modes)
        kinds = (
            ''
            if o.kinds == _ALL_KINDS
            else ' (' + ', '.join(k for k in ('topic', 'rsmq', 'stream') if k in o.kinds) + ')'
        )
        default = f'`{o.default}`' if o.default else ''
        lines.append(f'| `{o.name}` | {default} | {modes}{kinds} | {o.help} |')
    return '\n'.join(lines)
