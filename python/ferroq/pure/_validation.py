"""Argument validation: bad input raises a typed error before any request is yielded."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple, TypeVar

from ferroq._limits import MAX_COUNT, MAX_ID_LENGTH, MAX_SECONDS, MIN_LEASE, shown
from ferroq.exceptions import (
    BatchError,
    FerroqError,
    InvalidArgument,
    InvalidMessage,
    InvalidName,
    MessageTooLarge,
)
from ferroq.protocol import keys
from ferroq.types import Message, StreamEntry

TOPIC_RE = re.compile(keys.TOPIC_NAME_PATTERN)
ID_RE = re.compile(rf'\S{{1,{MAX_ID_LENGTH}}}')

T = TypeVar('T')

# --- validation ----------------------------------------------------------------------------------


def check_topic(name: object, what: str = 'topic') -> str:
    """A topic name, or InvalidName; stream names follow the same rule (``what='stream'``)."""
    if not isinstance(name, str) or not TOPIC_RE.fullmatch(name):
        raise InvalidName(f'invalid {what} name {shown(name)}: use 1-128 characters from A-Z a-z 0-9 _ . -')
    return name


def check_count(count: object, name: str = 'count', most: int | None = MAX_COUNT) -> int:
    """An int from 1 to ``most`` (no upper bound if None)."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1 or (most is not None and count > most):
        bounds = f'from 1 to {most}' if most is not None else '>= 1'
        raise InvalidArgument(f'{name} must be an int {bounds}, got {shown(count)}')
    return count


def seconds_of(value: object) -> float | None:
    """``value`` as seconds if it is a finite int or float (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def check_lease(lease: object) -> int:
    """A lease in seconds; returns it in milliseconds as the scripts take it."""
    seconds = seconds_of(lease)
    if seconds is None or not MIN_LEASE <= seconds <= MAX_SECONDS:
        raise InvalidArgument(
            f'lease must be a number of seconds from {MIN_LEASE:g} to {MAX_SECONDS:.0f}, got {shown(lease)}'
        )
    return max(1, round(seconds * 1000))


def check_block(block: object) -> float | None:
    """None when the call must not wait, else the seconds to wait."""
    if block is None:
        return None
    seconds = seconds_of(block)
    if seconds is None or not 0 <= seconds <= MAX_SECONDS:
        raise InvalidArgument(
            f'block must be None or a number of seconds from 0 to {MAX_SECONDS:.0f}, got {shown(block)}'
        )
    return seconds or None


def check_flag(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidArgument(f'{name} must be a bool, got {shown(value)}')
    return value


def check_queue(queue: object) -> str:
    if not isinstance(queue, str) or queue not in ('backlog', 'nextlog'):
        raise InvalidArgument(f"queue must be 'backlog' or 'nextlog', got {shown(queue)}")
    return queue


def utf8_len(text: str) -> int:
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
                raise InvalidMessage(f'message field {shown(key)} must be a str, got {type(value).__name__}')
            size += utf8_len(key) + utf8_len(value)
            flat += (key, value)
    except UnicodeEncodeError:
        raise InvalidMessage('a message field is not valid Unicode (lone surrogate)') from None
    if size > max_bytes:
        raise MessageTooLarge(f'message is {size} bytes, more than max_message_bytes={max_bytes}')
    return flat


def as_iterator(items: object, what: str) -> Iterator[Any]:
    if isinstance(items, (str, bytes, bytearray, Mapping, Message, StreamEntry)):
        raise InvalidArgument(f'{what} must be an iterable of items, not a single {type(items).__name__}')
    if not isinstance(items, Iterable):
        raise InvalidArgument(f'{what} must be an iterable, got {type(items).__name__}')
    return iter(items)


def as_list(items: object, what: str) -> list[Any]:
    return list(as_iterator(items, what))


def _check_each(
    items: list[Any], check: Callable[[Any], T], start: int = 0
) -> tuple[list[T], list[tuple[int, FerroqError]]]:
    """``check`` of each item, and each item it refuses (InvalidMessage) as (``start`` + its index, error)."""
    out: list[T] = []
    errors: list[tuple[int, FerroqError]] = []
    for index, item in enumerate(items, start):
        try:
            out.append(check(item))
        except InvalidMessage as exc:
            errors.append((index, exc))
    return out, errors


def batch_error(errors: Sequence[tuple[int, FerroqError]], total: int) -> BatchError:
    """The error of a batch of ``total`` messages that ``errors`` refuse: nothing of it is written."""
    return BatchError(f'{len(errors)} of {total} messages are invalid; nothing was written', errors=list(errors))


def check_all(items: list[Any], check: Callable[[Any], T]) -> list[T]:
    """``check`` of every item of a batch; BatchError (listing each one refused) if any is invalid."""
    out, errors = _check_each(items, check)
    if errors:
        raise batch_error(errors, len(items))
    return out


def check_batch(messages: object, max_bytes: int, max_fields: int | None = None) -> list[list[str]]:
    """Validate every message of a batch; BatchError (listing each bad one) if any is invalid."""
    return check_all(as_list(messages, 'messages'), lambda fields: check_fields(fields, max_bytes, max_fields))


def check_chunk(items: list[Any], max_bytes: int, start: int) -> list[list[str]]:
    """Validate one chunk of a stream; its BatchError names stream indexes (the Rust core words it the same)."""
    out, errors = _check_each(items, lambda fields: check_fields(fields, max_bytes), start)
    if errors:
        raise BatchError(
            f'{len(errors)} of {len(items)} messages in the chunk from index {start} are invalid; '
            'nothing of that chunk was written',
            errors=errors,
        )
    return out


def check_id(msg_id: object) -> str:
    if not isinstance(msg_id, str) or not ID_RE.fullmatch(msg_id):
        raise InvalidArgument(
            f'a message id must be a non-empty str of at most {MAX_ID_LENGTH} characters without whitespace, '
            f'got {shown(msg_id)}'
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
    for item in as_list(messages, 'messages'):
        if isinstance(item, Message):
            if item.topic != topic:
                raise InvalidArgument(
                    f'message {shown(item.id)} was claimed from topic {shown(item.topic)}, not {shown(topic)}'
                )
            refs.append(Ref(topic, check_id(item.id), _fence(item)))
        else:
            refs.append(Ref(topic, check_id(item), ''))
    return refs


def check_messages(messages: object) -> list[Ref]:
    """Messages of any topics (Client.commit / extend / release): bare ids have no topic, so they are refused."""
    refs = []
    for item in as_list(messages, 'messages'):
        if not isinstance(item, Message):
            raise InvalidArgument(f'expected a Message, got {type(item).__name__} (use Topic methods for bare ids)')
        refs.append(Ref(check_topic(item.topic), check_id(item.id), _fence(item)))
    return refs


def check_owner(owner: object, required: bool = False) -> str:
    """A worker name (the owner of a processing list); '' for None unless ``required``."""
    if owner is None and not required:
        return ''
    if not isinstance(owner, str) or not ID_RE.fullmatch(owner):
        raise InvalidArgument(
            f'owner must be a non-empty str of at most {MAX_ID_LENGTH} characters without whitespace, got {shown(owner)}'
        )
    return owner


def check_delay(delay: object) -> int:
    """A release delay in seconds; returns it in milliseconds (0: release now, else at least 1)."""
    seconds = seconds_of(delay)
    if seconds is None or not 0 <= seconds <= MAX_SECONDS:
        raise InvalidArgument(f'delay must be a number of seconds from 0 to {MAX_SECONDS:.0f}, got {shown(delay)}')
    return max(1, round(seconds * 1000)) if seconds else 0


def check_dead_topic(topic: str, to: object, what: str = 'topic') -> str:
    """The dead-letter topic (or stream) of ``topic``: ``to``, or ``<topic>.dead``; never the topic itself."""
    name = check_topic(f'{topic}.dead' if to is None else to, what)
    if name == topic:
        raise InvalidArgument(f'a dead-letter {what} must differ from the {what} itself, got {shown(name)}')
    return name


def check_error(error: object) -> str:
    """The error text recorded with dead-lettered messages."""
    if not isinstance(error, str):
        raise InvalidArgument(f'error must be a str, got {type(error).__name__}')
    return error


def check_topics(topics: object) -> list[str]:
    if not isinstance(topics, (list, tuple)) or not topics:
        raise InvalidArgument(f'topics must be a non-empty list of topic names, got {shown(topics)}')
    return [check_topic(name) for name in topics]


def check_field_names(fields: object, reserved: tuple[str, ...]) -> list[str]:
    """The field names of an Arrow read: distinct str, none of them one of the batch's own columns."""
    names: list[str] = []
    for name in as_iterator(fields, 'fields'):
        if not isinstance(name, str) or not encodes(name):
            raise InvalidArgument(f'a field name must be a str, got {shown(name)}')
        if name in reserved or name in names:
            raise InvalidArgument(
                f'field name {shown(name)} is repeated or is a column of the batch already ({", ".join(reserved)})'
            )
        names.append(name)
    return names


def encodes(text: str) -> bool:
    """Whether ``text`` is valid Unicode (no lone surrogate), so it has a UTF-8 form."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True
