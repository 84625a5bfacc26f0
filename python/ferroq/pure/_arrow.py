"""Arrow rows as messages for the pure clients (``publish_arrow`` / ``send_arrow``): the twin of
``src/protocol/arrow.rs`` and ``src/bindings/arrow.rs``, byte for byte (docs/protocol.md, "Arrow rows").

pyarrow is imported here only, when a call needs it: ``import ferroq`` never loads it.
"""

from __future__ import annotations

import base64
import json
import math
import random
import struct
import uuid
from collections.abc import Iterator
from decimal import Decimal
from typing import Any, NamedTuple, Optional

from ferroq._limits import MAX_DEDUP_KEY, MAX_DEDUP_TTL, MAX_FIELDS, MAX_ID_LENGTH, shown
from ferroq.exceptions import FerroqError, InvalidArgument, InvalidMessage, MessageTooLarge
from ferroq.protocol import keys
from ferroq.pure import _rsmq, _streams
from ferroq.pure._errors import reply_error
from ferroq.pure._requests import Plan
from ferroq.pure._rfq import TopicKeys, new_id, write_chunk
from ferroq.pure._send import SHA, send
from ferroq.pure._settings import Settings
from ferroq.pure._validation import ID_RE

Value = Optional[str]


def load_pyarrow() -> Any:
    try:
        import pyarrow  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        raise InvalidArgument('publish_arrow needs pyarrow, which is not installed: pip install pyarrow') from None
    return pyarrow


# --- arguments -------------------------------------------------------------------------------------------


def check_dedup_key(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, str) and 0 < len(value) <= MAX_DEDUP_KEY:
        return value
    raise InvalidArgument(
        f'dedup_key must be None or a non-empty str of at most {MAX_DEDUP_KEY} characters, got {shown(value)}'
    )


def check_dedup_ttl(value: object) -> int:
    """dedup_ttl in seconds; returns milliseconds, rounded up."""
    if (
        not isinstance(value, bool)
        and isinstance(value, (int, float))
        and 0 < float(value) <= MAX_DEDUP_TTL
        and not math.isnan(float(value))
    ):
        return math.ceil(float(value) * 1000.0)
    raise InvalidArgument(
        f'dedup_ttl must be a number of seconds > 0 and at most {MAX_DEDUP_TTL:.0f} (30 days), got {shown(value)}'
    )


def check_column(value: object, what: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, str) and value:
        return value
    raise InvalidArgument(f'{what} must be None or a column name (a non-empty str), got {shown(value)}')


def dedup_token(dedup_key: str, chunk: int) -> str:
    return keys.dedup_token(dedup_key, chunk)


# --- data --------------------------------------------------------------------------------------------------


def batches(pa: Any, data: object) -> tuple[Any, Iterator[Any]]:
    """The schema and record batches of ``data``."""
    if isinstance(data, pa.RecordBatch):
        return data.schema, iter([data])
    if isinstance(data, pa.Table):
        return data.schema, iter(data.to_batches())
    if isinstance(data, pa.RecordBatchReader):
        return data.schema, iter(data)
    try:
        if hasattr(data, '__arrow_c_stream__'):
            reader = pa.RecordBatchReader.from_stream(data)
            return reader.schema, iter(reader)
        if hasattr(data, '__arrow_c_array__'):
            batch = pa.record_batch(data)
            return batch.schema, iter([batch])
    except (pa.ArrowException, TypeError, ValueError) as exc:
        raise InvalidArgument(f'the Arrow data cannot be read: {exc}') from None
    raise InvalidArgument(
        'data must be a pyarrow RecordBatch, Table or RecordBatchReader, or an object with '
        '__arrow_c_stream__ or __arrow_c_array__ (the Arrow PyCapsule interface), '
        f'got {type(data).__name__}'
    )


# --- types -------------------------------------------------------------------------------------------------


def unsupported(pa: Any, t: Any) -> str | None:
    """The kind of a type that cannot be published (first offending child of a nested type), or None."""
    types = pa.types
    if types.is_dictionary(t):
        return unsupported(pa, t.value_type)
    if types.is_list(t) or types.is_large_list(t) or types.is_fixed_size_list(t):
        return unsupported(pa, t.value_type)
    if types.is_map(t):
        return unsupported(pa, t.key_type) or unsupported(pa, t.item_type)
    if types.is_struct(t):
        for i in range(t.num_fields):
            why = unsupported(pa, t.field(i).type)
            if why:
                return why
        return None
    if types.is_float16(t):
        return 'float16'
    if types.is_union(t):
        return 'union'
    if getattr(types, 'is_interval', lambda _t: False)(t) or str(t).startswith('month_day_nano_interval'):
        return 'interval'
    if getattr(types, 'is_list_view', lambda _t: False)(t) or getattr(types, 'is_large_list_view', lambda _t: False)(t):
        return 'list_view'
    if getattr(types, 'is_run_end_encoded', lambda _t: False)(t):
        return 'run_end_encoded'
    if (
        types.is_null(t)
        or types.is_boolean(t)
        or types.is_integer(t)
        or types.is_float32(t)
        or types.is_float64(t)
        or types.is_decimal(t)
        or _is_text(pa, t)
        or _is_bytes(pa, t)
        or types.is_timestamp(t)
        or types.is_date(t)
        or types.is_time(t)
        or types.is_duration(t)
    ):
        return None
    return str(t)


def _is_text(pa: Any, t: Any) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or getattr(pa.types, 'is_string_view', bool)(t))


def _is_bytes(pa: Any, t: Any) -> bool:
    return bool(
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
        or getattr(pa.types, 'is_binary_view', bool)(t)
    )


# --- string forms -------------------------------------------------------------------------------------------


def _rt32(v: float) -> float | None:
    try:
        return float(struct.unpack('<f', struct.pack('<f', v))[0])
    except OverflowError:
        return None


def f32_text(x: float) -> str:
    """The shortest decimal that reads back as the same float32 (``x`` holds it exactly), as ``repr`` lays out."""
    if math.isnan(x):
        return 'nan'
    if math.isinf(x):
        return 'inf' if x > 0 else '-inf'
    if x == 0:
        return repr(x)
    for p in range(1, 10):
        s = f'{x:.{p - 1}e}'
        if _rt32(float(s)) == x:
            return repr(float(s))
        mantissa, exp = s.split('e')
        digits = int(mantissa.replace('.', '').replace('-', ''))
        sign = '-' if x < 0 else ''
        scale = int(exp) - (p - 1)
        best: tuple[Decimal, str] | None = None
        for d in (digits - 1, digits + 1):
            if d <= 0 or len(str(d)) != p:
                continue
            cand = f'{sign}{d}e{scale}'
            if _rt32(float(cand)) == x:
                dist = abs(Decimal(cand) - Decimal(x))
                if best is None or dist < best[0]:
                    best = (dist, cand)
        if best is not None:
            return repr(float(best[1]))
    return repr(x)


def _civil(days: int) -> tuple[int, int, int]:
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (1 if m <= 2 else 0), m, d


def _date(days: int) -> str:
    y, m, d = _civil(days)
    return f'{y:04d}-{m:02d}-{d:02d}'


_UNITS = {'s': (1, 0), 'ms': (1_000, 3), 'us': (1_000_000, 6), 'ns': (1_000_000_000, 9)}


def _clock(secs: int, frac: int, digits: int) -> str:
    text = f'{secs // 3600:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}'
    return f'{text}.{frac:0{digits}d}' if digits else text


def _timestamp(v: int, unit: str, utc: bool) -> str:
    per, digits = _UNITS[unit]
    secs, frac = divmod(v, per)
    days, sod = divmod(secs, 86_400)
    return f'{_date(days)}T{_clock(sod, frac, digits)}{"Z" if utc else ""}'


def _time(v: int, unit: str) -> str:
    per, digits = _UNITS[unit]
    secs, frac = divmod(v, per)
    return _clock(secs, frac, digits)


def _json_str(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def _ints(pa: Any, arr: Any, width: Any) -> list[int | None]:
    return list(arr.cast(width).to_pylist())


def _scalar_texts(pa: Any, arr: Any, json_form: bool) -> list[Value] | None:
    """String (or JSON) forms of a non-nested array; None if the type is nested. Nulls are None."""
    t = arr.type
    types = pa.types
    values: list[Any]
    if types.is_null(t):
        return [None] * len(arr)
    if types.is_boolean(t):
        return [None if v is None else ('true' if v else 'false') for v in arr.to_pylist()]
    if types.is_integer(t):
        return [None if v is None else str(v) for v in arr.to_pylist()]
    if types.is_float64(t) or types.is_float32(t):
        fmt = f32_text if types.is_float32(t) else repr
        out: list[Value] = []
        for v in arr.to_pylist():
            if v is None:
                out.append(None)
            elif json_form and (math.isnan(v) or math.isinf(v)):
                out.append('NaN' if math.isnan(v) else ('Infinity' if v > 0 else '-Infinity'))
            else:
                out.append(fmt(v))
        return out
    if types.is_duration(t):
        return [None if v is None else str(v) for v in _ints(pa, arr, pa.int64())]
    if _is_text(pa, t):
        values = arr.to_pylist()
        return [None if v is None else (_json_str(v) if json_form else v) for v in values]
    quoted = _quoted_texts(pa, arr)
    if quoted is None:
        return None
    if json_form:
        return [None if v is None else f'"{v}"' for v in quoted]
    return quoted


def _quoted_texts(pa: Any, arr: Any) -> list[Value] | None:
    """String forms of the types that JSON holds as strings (decimals, binary, times); None for others."""
    t = arr.type
    types = pa.types
    if types.is_decimal(t):
        return [None if v is None else format(v, 'f') for v in arr.to_pylist()]
    if _is_bytes(pa, t):
        return [None if v is None else base64.b64encode(v).decode('ascii') for v in arr.to_pylist()]
    if types.is_timestamp(t):
        utc = t.tz is not None
        return [None if v is None else _timestamp(v, t.unit, utc) for v in _ints(pa, arr, pa.int64())]
    if types.is_date32(t):
        return [None if v is None else _date(v) for v in _ints(pa, arr, pa.int32())]
    if types.is_date64(t):
        return [None if v is None else _date(v // 86_400_000) for v in _ints(pa, arr, pa.int64())]
    if types.is_time(t):
        width = pa.int32() if types.is_time32(t) else pa.int64()
        return [None if v is None else _time(v, t.unit) for v in _ints(pa, arr, width)]
    return None


def _json(pa: Any, arr: Any) -> list[str]:
    """The JSON form of every element (``null`` for a null)."""
    t = arr.type
    types = pa.types
    if types.is_dictionary(t):
        return _json(pa, arr.dictionary_decode())
    scalar = _scalar_texts(pa, arr, True)
    if scalar is not None:
        return ['null' if v is None else v for v in scalar]
    valid = arr.is_valid().to_pylist()
    n = len(arr)
    if types.is_list(t) or types.is_large_list(t):
        child = _json(pa, arr.values)
        offsets = arr.offsets.to_pylist()
        return ['[' + ','.join(child[offsets[i] : offsets[i + 1]]) + ']' if valid[i] else 'null' for i in range(n)]
    if types.is_fixed_size_list(t):
        child = _json(pa, arr.values)
        size = t.list_size
        base = arr.offset
        return [
            '[' + ','.join(child[(base + i) * size : (base + i + 1) * size]) + ']' if valid[i] else 'null'
            for i in range(n)
        ]
    if types.is_map(t):
        entries = arr.values
        key_texts = _scalar_or_json_texts(pa, entries.field(0))
        items = _json(pa, entries.field(1))
        offsets = arr.offsets.to_pylist()
        out = []
        for i in range(n):
            if not valid[i]:
                out.append('null')
                continue
            pairs = (
                f'{_json_str("null" if key_texts[j] is None else str(key_texts[j]))}:{items[j]}'
                for j in range(offsets[i], offsets[i + 1])
            )
            out.append('{' + ','.join(pairs) + '}')
        return out
    if types.is_struct(t):
        names = [_json_str(t.field(j).name) for j in range(t.num_fields)]
        children = [_json(pa, arr.field(j)) for j in range(t.num_fields)]
        return [
            '{' + ','.join(f'{names[j]}:{children[j][i]}' for j in range(len(names))) + '}' if valid[i] else 'null'
            for i in range(n)
        ]
    raise InvalidArgument(f'cannot publish values of type {t}')  # refused by unsupported() before


def _scalar_or_json_texts(pa: Any, arr: Any) -> list[Value]:
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    scalar = _scalar_texts(pa, arr, False)
    if scalar is not None:
        return scalar
    valid = arr.is_valid().to_pylist()
    return [v if ok else None for v, ok in zip(_json(pa, arr), valid)]


def texts(pa: Any, arr: Any) -> list[Value]:
    """The string form of every element of a top-level column (None for a null)."""
    return _scalar_or_json_texts(pa, arr)


# --- rows into messages ---------------------------------------------------------------------------------------


class Layout(NamedTuple):
    target: str  # 'topic', 'rsmq' or 'stream'
    fields: list[tuple[int, str]]
    id: tuple[int, str] | None
    value: bool  # a value column (raw bytes kept for binary)
    json_body: bool


def _index(schema: Any, name: str, what: str) -> int:
    names = list(schema.names)
    if name not in names:
        listed = ', '.join(shown(n) for n in names)
        raise InvalidArgument(f'{what} {shown(name)} is not a column of the data (columns: {listed})')
    return names.index(name)


def _refuse(name: str, why: str) -> InvalidArgument:
    return InvalidArgument(
        f'column {shown(name)} holds {why} values, which cannot be published (see the string forms in docs/protocol.md)'
    )


def layout(pa: Any, schema: Any, target: str, id_column: str | None, value_column: str | None) -> Layout:
    """Checks the schema against the options, in the order of the native client."""
    id_ = None
    if id_column is not None:
        i = _index(schema, id_column, 'id_column')
        t = schema.field(i).type
        why = unsupported(pa, t)
        if why:
            raise _refuse(id_column, why)
        nested = pa.types.is_nested(t) and not pa.types.is_dictionary(t)
        if nested or pa.types.is_null(t):
            raise InvalidArgument(f'id_column {shown(id_column)} must hold scalar values (not nested, not null-typed)')
        id_ = (i, schema.field(i).name)
    fields: list[tuple[int, str]] = []
    if value_column is not None:
        i = _index(schema, value_column, 'value_column')
        t = schema.field(i).type
        ok = _is_text(pa, t) if target == 'rsmq' else (_is_text(pa, t) or _is_bytes(pa, t))
        if not ok:
            kinds = 'a string column (RSMQ messages are text)' if target == 'rsmq' else 'a string or binary column'
            raise InvalidArgument(f'value_column {shown(value_column)} must be {kinds}')
        fields.append((i, schema.field(i).name))
    else:
        for i, f in enumerate(schema):
            if (id_ is not None and id_[0] == i) or pa.types.is_null(f.type):
                continue
            why = unsupported(pa, f.type)
            if why:
                raise _refuse(f.name, why)
            if not f.name and target != 'rsmq':
                raise InvalidArgument('a column name is empty: message field names must be non-empty')
            if any(name == f.name for _, name in fields):
                raise InvalidArgument(f'column name {shown(f.name)} appears twice: message field names must be unique')
            fields.append((i, f.name))
    if target == 'stream' and len(fields) > MAX_FIELDS:
        raise InvalidArgument(
            f'a stream message may have at most {MAX_FIELDS} fields, the data has {len(fields)} columns'
        )
    return Layout(target, fields, id_, value_column is not None, target == 'rsmq' and value_column is None)


class Row(NamedTuple):
    id: str | None
    fields: list[tuple[str, str | bytes]]  # for RSMQ: one ('', body)
    utf16: int


def _utf8_len(v: str | bytes) -> int:
    if isinstance(v, bytes):
        return len(v)
    return len(v) if v.isascii() else len(v.encode())


def _utf16_len(v: str) -> int:
    return len(v) if v.isascii() else len(v.encode('utf-16-le')) // 2


class Rows:
    """Rows of record batches cut into chunks by their index in the whole data."""

    def __init__(self, pa: Any, source: Iterator[Any], lay: Layout, max_bytes: int) -> None:
        self._pa = pa
        self._source = source
        self.layout = lay
        self._max = max_bytes
        self._pending: list[Row] = []
        self._cols: list[tuple[str, list[Any]]] = []
        self._ids: list[Value] = []
        self._pos = 0
        self._len = 0
        self._row = 0
        self._done = False

    def _load(self) -> bool:
        try:
            batch = next(self._source)
        except StopIteration:
            self._done = True
            return False
        pa, lay = self._pa, self.layout
        self._cols = []
        for i, name in lay.fields:
            col = batch.column(i)
            if lay.value and not lay.json_body and _is_bytes(pa, col.type):
                self._cols.append((name, col.to_pylist()))  # raw bytes
            else:
                self._cols.append((name, texts(pa, col)))
        self._ids = texts(pa, batch.column(lay.id[0])) if lay.id else []
        self._pos, self._len = 0, batch.num_rows
        return True

    def next_chunk(self, n: int) -> list[Row]:
        chunk: list[Row] = []
        while len(chunk) < n:
            if self._pos >= self._len:
                if self._done or not self._load():
                    break
                continue
            chunk.append(self._encode(self._pos))
            self._pos += 1
            self._row += 1
        return chunk

    def _encode(self, i: int) -> Row:
        row, lay = self._row, self.layout
        msg_id = None
        if lay.id is not None:
            msg_id = self._ids[i]
            if msg_id is None:
                raise InvalidMessage(f'row {row}: the id column {shown(lay.id[1])} is null')
            if not ID_RE.fullmatch(msg_id):
                raise InvalidMessage(
                    f'row {row}: a message id must be a non-empty str of at most {MAX_ID_LENGTH} characters without '
                    f'whitespace, got {shown(msg_id)}'
                )
        fields: list[tuple[str, str | bytes]] = []
        size = 0
        if lay.json_body:
            obj = {name: values[i] for name, values in self._cols if values[i] is not None}
            if obj:
                body = json.dumps(obj, ensure_ascii=False, separators=(',', ':'))
                fields.append(('', body))
                size = _utf8_len(body)
        else:
            for name, values in self._cols:
                v = values[i]
                if v is not None:
                    fields.append((name, v))
                    size += (0 if lay.target == 'rsmq' else _utf8_len(name)) + _utf8_len(v)
        if not fields:
            raise InvalidMessage(f'row {row}: the message has no field: every value is null')
        if size > self._max:
            raise MessageTooLarge(f'row {row}: message is {size} bytes, more than max_message_bytes={self._max}')
        utf16 = 0
        if lay.target == 'rsmq':
            first = fields[0][1]
            utf16 = _utf16_len(first if isinstance(first, str) else first.decode())
        return Row(msg_id, fields, utf16)


def chunk_token(dedup_key: str | None, index: int) -> str:
    return dedup_token(dedup_key, index) if dedup_key is not None else uuid.uuid4().hex


# --- the calls ---------------------------------------------------------------------------------------------

Target = Any  # TopicKeys, RsmqRef or StreamRef
Command = tuple[Any, ...]


def _command(
    lay: Layout, target: Target, extra: Any, chunk: list[Row], token: str, dedup: bool, ttl_ms: int
) -> tuple[str, Command]:
    """(script name, the EVALSHA call) of one chunk."""
    ttl = str(ttl_ms if dedup else keys.STREAM_PUBLISH_TOKEN_MS)
    args: list[Any] = []
    if lay.target == 'topic':
        ids = [str(row.id) for row in chunk]
        script_keys = [target.backlog, keys.rfq_published(target.name, token), *(target.prefix + i for i in ids)]
        # Ids from the id column (fresh ids go through _write_topic_chunk): publish-2n, whose insert-if-absent (an
        # EXISTS per message, in Lua) keeps a message that already exists under a caller's id, which a
        # transaction cannot do without reading every key first. Without a dedup key no record is kept:
        # insert-if-absent already makes a resent chunk harmless.
        args += ('0', ttl if dedup else '')
        for msg_id, row in zip(ids, chunk):
            args += (msg_id, str(len(row.fields)))
            for k, v in row.fields:
                args += (k, v)
        name = 'rfq/publish-2n'
    elif lay.target == 'rsmq':
        script_keys = [*target.pair, target.published(token)]
        channel = target.channel if target.realtime else ''
        args += (extra, str(max(row.utf16 for row in chunk)), channel, ttl)
        for row in chunk:
            args += (''.join(random.choices(_rsmq._ALPHABET, k=22)), row.fields[0][1])
        name = 'rsmq/send-3'
    else:
        script_keys = [target.key, keys.stream_published(target.name, token)]
        args += (ttl, *extra)
        for row in chunk:
            args.append(str(len(row.fields)))
            for k, v in row.fields:
                args += (k, v)
        name = 'streams/publish-2'
    return name, ('EVALSHA', SHA[name], str(len(script_keys)), *script_keys, *args)


def _write_topic_chunk(
    ctx: Settings, topic: TopicKeys, chunk: list[Row], token: str, dedup: bool, ttl_ms: int
) -> Plan[int]:
    """A topic's chunk of fresh ids: one watched transaction (:func:`ferroq.pure._rfq.write_chunk`)."""
    ids = [new_id() for _ in chunk]
    hsets = [(topic.prefix + msg_id, [v for pair in row.fields for v in pair]) for msg_id, row in zip(ids, chunk)]
    ttl = ttl_ms if dedup else keys.STREAM_PUBLISH_TOKEN_MS
    record = keys.rfq_published(topic.name, token)
    # A dedup key's record stays for dedup_ttl; a random token's is deleted once the chunk is written.
    return (yield from write_chunk(ctx, topic, record, ttl, False, ids, hsets, forget=not dedup))


def _written(ctx: Settings, lay: Layout, target: Target, name: str, reply: Any) -> int:
    """How many messages one chunk's call wrote (0 when its record says an earlier call did)."""
    if lay.target == 'topic':
        if not isinstance(reply, int):
            raise reply_error(ctx, name, reply)
        return max(reply, 0)
    if lay.target == 'rsmq':
        if isinstance(reply, list) and len(reply) == 2 and reply[0] == 'toolong':
            raise _rsmq._batch_too_long([], reply[1])
        ok = _rsmq._status(ctx, target, name, reply)
        if len(ok) != 2 or not isinstance(ok[1], list):
            raise reply_error(ctx, name, reply)
        return len(ok[1]) if ok[0] == 'ok' else 0
    ids, fresh = _streams.publish_reply(ctx, reply)
    return len(ids) if fresh else 0


def _publish(
    ctx: Settings,
    kind: str,
    target: Target,
    extra: Any,
    data: object,
    dedup_key: str | None,
    ttl_ms: int,
    id_column: str | None,
    value_column: str | None,
) -> Plan[tuple[int, int]]:
    pa = load_pyarrow()
    schema, source = batches(pa, data)
    lay = layout(pa, schema, kind, id_column, value_column)
    rows = Rows(pa, source, lay, ctx.max_message_bytes)
    n = ctx.chunk_size
    read = published = index = 0
    maxsize: tuple[int, str] | None = None
    while True:
        try:
            try:
                chunk = rows.next_chunk(n)
            except pa.ArrowException as exc:
                raise InvalidArgument(f'reading the Arrow data failed: {exc}') from None
            if not chunk:
                return read, published
            if kind == 'rsmq':
                if maxsize is None:
                    maxsize = yield from _rsmq.queue_maxsize(ctx, target)
                limit, text = maxsize
                for i, row in enumerate(chunk):
                    if limit != -1 and row.utf16 > limit:
                        too_long = _rsmq._too_long(row.utf16, text)
                        raise MessageTooLarge(f'row {index * n + i}: {too_long}')
            token = dedup_token(dedup_key, index) if dedup_key is not None else uuid.uuid4().hex
            read += len(chunk)
            if kind == 'topic' and chunk[0].id is None:
                published += yield from _write_topic_chunk(ctx, target, chunk, token, dedup_key is not None, ttl_ms)
            else:
                name, command = _command(lay, target, extra, chunk, token, dedup_key is not None, ttl_ms)
                reply = (yield from send(ctx, [command], retry_drop=True))[0]  # every call is idempotent
                published += _written(ctx, lay, target, name, reply)
        except FerroqError as exc:
            exc.published = published
            raise
        index += 1


def publish_topic(
    ctx: Settings,
    topic: TopicKeys,
    data: object,
    dedup_key: object,
    dedup_ttl: object,
    id_column: object,
    value_column: object,
) -> Plan[tuple[int, int]]:
    """Topic.publish_arrow: every argument is checked before the data is read."""
    key, ttl = check_dedup_key(dedup_key), check_dedup_ttl(dedup_ttl)
    ids, value = check_column(id_column, 'id_column'), check_column(value_column, 'value_column')
    return (yield from _publish(ctx, 'topic', topic, None, data, key, ttl, ids, value))


def send_rsmq(
    ctx: Settings,
    ref: _rsmq.RsmqRef,
    data: object,
    dedup_key: object,
    dedup_ttl: object,
    value_column: object,
    delay: object,
) -> Plan[tuple[int, int]]:
    """RsmqQueue.send_arrow."""
    key, ttl = check_dedup_key(dedup_key), check_dedup_ttl(dedup_ttl)
    value = check_column(value_column, 'value_column')
    delay_ms = _rsmq._optional_ms(delay, 'delay')
    return (yield from _publish(ctx, 'rsmq', ref, delay_ms, data, key, ttl, None, value))


def publish_stream(
    ctx: Settings,
    stream: _streams.StreamRef,
    data: object,
    dedup_key: object,
    dedup_ttl: object,
    value_column: object,
    maxlen: object,
    max_age: object,
    approximate: object,
) -> Plan[tuple[int, int]]:
    """Stream.publish_arrow."""
    key, ttl = check_dedup_key(dedup_key), check_dedup_ttl(dedup_ttl)
    value = check_column(value_column, 'value_column')
    retention = _streams.check_retention(maxlen, max_age, approximate)
    return (yield from _publish(ctx, 'stream', stream, retention, data, key, ttl, None, value))
