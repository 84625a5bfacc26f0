"""Sending, with the retry policy shared by every operation:

- NOSCRIPT: ``SCRIPT LOAD`` and run again the commands that were refused;
- LOADING: wait (up to 10 s) and run them again, then ConnectionFailed;
- a dropped connection: run the whole request once more, only for insert-if-absent or fenced writes
  (publish, commit, extend);
- anything else: :func:`ferroq.pure._errors.map_error` turns it into a :mod:`ferroq.exceptions` class.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from redis import exceptions as rex

from ferroq import protocol
from ferroq.exceptions import ConnectionFailed
from ferroq.pure._errors import map_error, reply_error
from ferroq.pure._requests import Call, Pipe, Plan, Sleep
from ferroq.pure._settings import Settings, deletes_of

LOADING_WAIT = 10.0
SHA = protocol.script_hashes()
_SCRIPT_BY_SHA = {sha: name for name, sha in SHA.items()}


def evalsha(script: str, script_keys: Sequence[str], args: Sequence[str]) -> tuple[str, ...]:
    return ('EVALSHA', SHA[script], str(len(script_keys)), *script_keys, *args)


# --- sending, with the retry policy --------------------------------------------------------------


def send(
    ctx: Settings,
    commands: list[tuple[str, ...]],
    *,
    retry_drop: bool = False,
    raw: bool = False,
    repeated: list[bool] | None = None,
    min_deletes: int = 1,
) -> Plan[list[Any]]:
    """Run commands in one round trip (one Call, or a Pipe); returns their results in order.

    ``retry_drop``: the commands are safe to repeat, so run them again once after a dropped connection.
    ``raw``: replies keep their strings as bytes (values that may not be UTF-8). ``repeated``: a True is
    appended to it when the commands were sent once more after a drop (the first attempt may still arrive).

    The keys the client left to delete later (:class:`~ferroq.pure._settings.DeleteLater`) go first, in one
    ``DEL``, in the same round trip, once ``min_deletes`` of them wait; it is best effort (a key it misses
    expires): its reply, an error included, is dropped. A request that fails (a dropped connection) leaves
    them for the next one.
    """
    left = ctx.delete_later.take(min_deletes)
    deletes = deletes_of(left)
    commands = [*deletes, *commands]  # a NOSCRIPT round may replace EVALSHA calls with EVAL
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
                loading_deadline = yield from wait_loading(ctx, loading_deadline)
                continue
            if retry_drop and not dropped and is_drop(reply):
                dropped = True
                if repeated is not None:
                    repeated.append(True)
                continue
            for key in left:  # not sent, or not known to be: left for the next request again
                ctx.delete_later.add(key)
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
            elif isinstance(item, BaseException) and i >= len(deletes):
                raise map_error(item, ctx)
            else:
                results[i] = item
        if missing:
            loads += 1
            yield from _scripts_again(ctx, commands, again, missing, loads)
        if loading:
            loading_deadline = yield from wait_loading(ctx, loading_deadline)
        pending = again
    return results[len(deletes) :]


def _scripts_again(
    ctx: Settings, commands: list[tuple[str, ...]], again: list[int], missing: set[str], loads: int
) -> Plan[None]:
    """After NOSCRIPT (the ``loads``-th time in one send): load the ``missing`` scripts; from the third time,
    make the refused calls (indexes ``again``) EVAL with the source instead."""
    if loads > 2:
        # The cache keeps being flushed (SCRIPT FLUSH in a loop?): send the source with EVAL, which cannot
        # meet NOSCRIPT, instead of loading once more.
        for i in again:
            if commands[i][0] == 'EVALSHA':
                commands[i] = ('EVAL', protocol.script_source(_SCRIPT_BY_SHA[commands[i][1]]), *commands[i][2:])
    else:
        yield from send(ctx, [('SCRIPT', 'LOAD', protocol.script_source(_SCRIPT_BY_SHA[sha])) for sha in missing])


def is_drop(exc: BaseException) -> bool:
    return isinstance(exc, rex.ConnectionError) and not isinstance(
        exc, (rex.AuthenticationError, rex.AuthorizationError)
    )


def wait_loading(ctx: Settings, deadline: float | None) -> Plan[float]:
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
    return (yield from send(ctx, [evalsha(name, script_keys, args)]))[0]


def delete_now(ctx: Settings) -> Plan[None]:
    """Send the keys the client left to delete later, if any (a closing client does, best effort)."""
    yield from send(ctx, [])


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
