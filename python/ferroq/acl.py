"""Least-privilege Redis ACL users for ferroq: a producer, a consumer and an admin role per protocol and name prefix.

``python -m ferroq.acl ROLE PROTOCOL PREFIX USER`` prints the ``ACL SETUSER`` line; :func:`setuser` returns
its arguments. The README's table of rules is :func:`readme_section` (a test keeps them equal).

## How the rules hold

- **Keys and channels**: only the protocol's keys whose queue name starts with the prefix (``~rfq:<prefix>*``,
  ``~<ns>:<prefix>*`` and ``&<ns>:rt:<prefix>*``, ``~ferroq:stream:<prefix>*``). A prefix is matched
  literally: ``jobs`` also covers ``jobs-eu``. The RSMQ admin also gets ``<ns>:QUEUES``, the list of queues.
- **Scripts**: ferroq's operations are Lua scripts; each role may run exactly the scripts of its operations
  (``+evalsha|<sha1>``, Redis 7.0+), plus the commands those scripts call, so a refused operation fails
  before its script runs and writes nothing. ``EVAL`` (any script) is never granted; ``SCRIPT LOAD`` is
  (it only fills the script cache). The hashes change when ferroq's scripts do: set the users again after
  an upgrade.
- **Never**: ``@dangerous`` commands (``KEYS``, ``FLUSH*``, ``CONFIG``, ``INFO``, ``DEBUG``...). Without
  ``CONFIG``/``INFO`` the clients skip their check of ``maxmemory-policy``.

Refusals surface as :class:`~ferroq.exceptions.PermissionDenied`.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Literal

from ferroq import protocol
from ferroq.exceptions import InvalidArgument
from ferroq.protocol import keys

__all__ = ['PROTOCOLS', 'ROLES', 'Role', 'commands', 'readme_section', 'setuser']

Protocol = Literal['rfq', 'rsmq', 'streams']
RoleName = Literal['producer', 'consumer', 'admin']
PROTOCOLS: tuple[Protocol, ...] = ('rfq', 'rsmq', 'streams')
ROLES: tuple[RoleName, ...] = ('producer', 'consumer', 'admin')

#: What every connection sends: the handshake, PING, and loading scripts. (redis-py also sends CLIENT SETINFO
#: on Redis 7.2+ and ignores a refusal; 7.0 does not know the command, so a rule naming it would fail there.)
CONNECTION = ('hello', 'auth', 'ping', 'select', 'client|setname', 'script|load')


@dataclass(frozen=True)
class Role:
    """What one role may do: ``operations`` (for the docs), its ``scripts`` and its other ``commands``."""

    operations: str
    scripts: tuple[str, ...]
    commands: tuple[str, ...]


_RFQ_CONSUME = (
    *('rfq/claim-8n', 'rfq/commit-6n', 'rfq/extend-5', 'rfq/release-8', 'rfq/dead_letter-8n'),
    *('rfq/resume-6', 'rfq/harvest-8', 'rfq/stats-8'),
)
#: A publish chunk is a watched transaction, not a script (see docs/protocol.md, publish).
_RFQ_PUBLISH = ('watch', 'unwatch', 'get', 'multi', 'exec', 'hset', 'lpush', 'rpush', 'set', 'del')
_RSMQ_CONSUME = ('rsmq/receive-4', 'rsmq/delete-2', 'rsmq/visibility-2', 'rsmq/attributes-2')
_STREAM_CONSUME = ('streams/ack-1', 'streams/autoclaim-2', 'streams/dead_letter-2')

#: The roles, by protocol. A consumer's dead-letter target must lie under the same prefix.
RULES: dict[Protocol, dict[RoleName, Role]] = {
    'rfq': {
        'producer': Role('publish (every form)', ('rfq/publish-2n', 'rfq/publish_one-3'), _RFQ_PUBLISH),
        'consumer': Role(
            'claim (blocking too), commit, extend, release, dead_letter, resume, harvest, stats, peek; a Worker',
            _RFQ_CONSUME,
            ('blmove', 'hgetall'),
        ),
        'admin': Role(
            'everything: also publish, purge, harvest(all=True), inspect, topics',
            (*_RFQ_CONSUME, 'rfq/publish-2n', 'rfq/publish_one-3', 'rfq/purge-6', 'rfq/harvest_all-7', 'rfq/inspect-5'),
            ('blmove', 'hgetall', 'scan', *_RFQ_PUBLISH),
        ),
    },
    'rsmq': {
        'producer': Role('send, send_batch, send_arrow', ('rsmq/send-3',), ('hmget',)),
        'consumer': Role(
            'receive (blocking too), pop, delete (a message), change_visibility, attributes',
            _RSMQ_CONSUME,
            ('subscribe', 'unsubscribe'),
        ),
        'admin': Role(
            'everything: also send, create, set_attributes, delete_queue, rsmq_queues',
            (*_RSMQ_CONSUME, 'rsmq/send-3', 'rsmq/create-3', 'rsmq/set_attributes-2', 'rsmq/delete_queue-3'),
            ('hmget', 'subscribe', 'unsubscribe', 'smembers'),
        ),
    },
    'streams': {
        'producer': Role('publish (every form)', ('streams/publish-2',), ()),
        'consumer': Role(
            'group read (blocking too), ack, pending, autoclaim, dead_letter',
            _STREAM_CONSUME,
            ('xreadgroup', 'xpending'),
        ),
        'admin': Role(
            'everything: also publish, group create/destroy/info, length, range, trim, delete, streams',
            (*_STREAM_CONSUME, 'streams/publish-2'),
            ('xreadgroup', 'xpending', 'xgroup', 'xinfo', 'xlen', 'xrange', 'xtrim', 'del', 'scan'),
        ),
    },
}

_CALL = re.compile(r"""(?:redis\.p?call|call_in_slices)\(\s*['"]([A-Za-z]+)['"]""")
_PREFIX = re.compile(r'[A-Za-z0-9_.-]{0,128}')


@cache
def script_commands(name: str) -> frozenset[str]:
    """The commands script ``name`` may call (its own and those of the prelude's helpers it is sent with), lower
    case."""
    return frozenset(c.lower() for c in _CALL.findall(protocol.script_source(name)))


def commands(protocol_name: Protocol, role: RoleName) -> list[str]:
    """The ACL command rules of a role: ``-@all``, then what it may run, in a stable order."""
    rule = RULES[protocol_name][role]
    sha = protocol.script_hashes()
    allowed = set(CONNECTION) | set(rule.commands)
    for script in rule.scripts:
        allowed |= script_commands(script)
    return ['-@all', *sorted(f'+{c}' for c in allowed), *(f'+evalsha|{sha[s]}' for s in sorted(rule.scripts))]


def _patterns(protocol_name: Protocol, role: RoleName, prefix: str, ns: str) -> list[str]:
    if protocol_name == 'rfq':
        return [f'~{keys.RFQ_PREFIX}{prefix}*']
    if protocol_name == 'streams':
        return [f'~{keys.STREAM_PREFIX}{prefix}*']
    rules = [f'~{ns}:{prefix}*', f'&{keys.rsmq_channel(ns, prefix)}*']
    if role == 'admin':
        rules.insert(1, f'~{keys.rsmq_queues(ns)}')
    return rules


def setuser(
    user: str,
    role: RoleName,
    protocol_name: Protocol,
    prefix: str = '',
    *,
    ns: str = 'rsmq',
    password: str = '<password>',
) -> list[str]:
    """The arguments of ``ACL SETUSER`` for ``user`` in ``role`` on the ``protocol_name`` queues named ``prefix*``.

    ``password`` is written as ``>password`` (prefer ``#<sha256>`` in config files: pass it whole, starting
    with ``#``).

    Raises:
        InvalidArgument: an unknown role or protocol; a prefix or namespace with characters outside
            ``A-Z a-z 0-9 _ . -`` (they would be glob patterns in the rule).
    """
    if protocol_name not in RULES or role not in RULES[protocol_name]:
        raise InvalidArgument(f'unknown protocol or role {protocol_name!r}/{role!r}: {PROTOCOLS} x {ROLES}')
    for what, value in (('prefix', prefix), ('ns', ns)):
        if not _PREFIX.fullmatch(value) or (what == 'ns' and not value):
            raise InvalidArgument(f'{what} must be up to 128 characters from A-Z a-z 0-9 _ . -, got {value!r}')
    secret = password if password.startswith('#') else f'>{password}'
    return [
        'ACL',
        'SETUSER',
        user,
        'reset',
        'on',
        secret,
        'resetkeys',
        'resetchannels',
        *_patterns(protocol_name, role, prefix, ns),
        *commands(protocol_name, role),
    ]


def readme_section() -> str:
    """The README's ACL table and example lines (between ``<!-- acl-rules -->`` markers)."""
    lines = ['| protocol | role | may | key rules (prefix `jobs`) |', '|---|---|---|---|']
    for proto in PROTOCOLS:
        for role in ROLES:
            rule = RULES[proto][role]
            patterns = ' '.join(f'`{p}`' for p in _patterns(proto, role, 'jobs', 'rsmq'))
            lines.append(f'| {proto} | {role} | {rule.operations} | {patterns} |')
    lines += ['', 'The lines for prefix `jobs` (with this version of the scripts):', '', '```']
    for proto in PROTOCOLS:
        for role in ROLES:
            lines.append(' '.join(setuser(f'{proto}-{role}', role, proto, 'jobs')))
    lines.append('```')
    return '\n'.join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ferroq.acl ROLE PROTOCOL PREFIX USER [NS]``: print one ACL SETUSER line (password placeholder)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) not in (4, 5):
        print(main.__doc__, file=sys.stderr)
        return 2
    role, proto, prefix, user = args[:4]
    try:
        line = setuser(user, role, proto, prefix, ns=args[4] if len(args) == 5 else 'rsmq')  # type: ignore[arg-type]
    except InvalidArgument as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 2
    print(' '.join(line))
    return 0


if __name__ == '__main__':
    sys.exit(main())
