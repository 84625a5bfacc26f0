"""The checks of a server a client meets first: its version and its eviction policy."""

from __future__ import annotations

from ferroq.exceptions import UnsupportedServer
from ferroq.pure._errors import map_error
from ferroq.pure._requests import Call, Plan
from ferroq.pure._send import is_drop
from ferroq.pure._settings import Settings


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
    if isinstance(info, BaseException) and is_drop(info):
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
    if isinstance(info, BaseException) and is_drop(info):
        raise map_error(info, ctx)  # not connected: the next call asks again
    if isinstance(info, dict) and 'maxmemory_policy' in info:
        return str(info['maxmemory_policy'])
    return None
