"""rfq 1.4's command line inside ``ferroq``: the same verbs, flags, output on stdout and exit statuses.

``publish``, ``harvest`` and ``peek`` are ferroq's own verbs (they already take rfq's flags); this module adds
``version``, ``info``, ``list-topics``, ``list-queue``, ``purge-queue``, ``consume`` and ``completions``, and
the grouped ``--help`` that lists rfq's verbs apart from ferroq's. Where ferroq differs on purpose:
``consume`` claims with a lease and commits only after printing, ``harvest`` requeues only expired leases
(rfq's blind harvest is ``harvest --all --yes``), ``list-topics`` is sorted, ``version`` names ferroq.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import TYPE_CHECKING, Any, Callable

from ferroq import server
from ferroq.exceptions import FerroqError
from ferroq.protocol import keys

if TYPE_CHECKING:
    from ferroq.typing import ClientProtocol

__all__ = ['RFQ_VERBS', 'add_verbs', 'completions', 'group_help']

#: rfq 1.4's verbs in the order of its own help (0.1's are a subset).
RFQ_VERBS = (
    'version',
    'info',
    'list-topics',
    'list-queue',
    'purge-queue',
    'publish',
    'consume',
    'harvest',
    'peek',
    'completions',
)

# A blocking claim is repeated in slices this long, so Ctrl-C is seen promptly while consume waits for ever.
_CONSUME_SLICE = 1.0

Verb = Callable[..., argparse.ArgumentParser]


def _redis(args: argparse.Namespace) -> Any:
    """A redis-py connection to the same server, for rfq's plain reads that ferroq's API has no call for."""
    import redis

    return redis.Redis.from_url(server.resolve_url(args.url), decode_responses=True)


def _print_lines(args: argparse.Namespace, items: list[str]) -> None:
    if args.json:
        print(json.dumps(items, ensure_ascii=False))
    else:
        for item in items:
            print(item)


def _version(args: argparse.Namespace, client: ClientProtocol) -> int:
    from ferroq import __version__

    conn = _redis(args)
    try:
        redis_version = str(conn.info('server').get('redis_version', 'unknown'))
    finally:
        conn.close()
    if args.json:
        print(json.dumps({'ferroq': __version__, 'redis': redis_version}))
    else:
        print(f'ferroq {__version__}')
        print(f'redis {redis_version}')
    return 0


def _bar(n: int) -> str:
    """rfq's bar: about 10 * ln(n + 1) '#' characters (140 for a million messages)."""
    return int(10 * math.log(n + 1)) * '#'


def _info(args: argparse.Namespace, client: ClientProtocol) -> int:
    stats = [client.topic(name).stats() for name in sorted(client.topics())]
    if args.json:
        print(json.dumps([{'topic': s.topic, 'backlog': s.backlog, 'nextlog': s.nextlog} for s in stats]))
        return 0
    for s in stats:
        print(f'topic\t\t{s.topic}')
        print(f'backlog\t\t{s.backlog}\t\t{_bar(s.backlog)}')
        print(f'nextlog\t\t{s.nextlog}\t\t{_bar(s.nextlog)}')
        print()
    return 0


def _list_topics(args: argparse.Namespace, client: ClientProtocol) -> int:
    _print_lines(args, client.topics())
    return 0


def _list(args: argparse.Namespace, client: ClientProtocol) -> list[str]:
    """The ids of ``args.queue`` of ``args.topic`` as one LRANGE returns them (head first)."""
    client.topic(args.topic)  # the name is checked by the API's rules
    key = keys.rfq_backlog(args.topic) if args.queue == 'backlog' else keys.rfq_nextlog(args.topic)
    conn = _redis(args)
    try:
        ids: list[str] = conn.lrange(key, 0, -1)
    finally:
        conn.close()
    return ids


def _list_queue(args: argparse.Namespace, client: ClientProtocol) -> int:
    """rfq's listing: one LRANGE, head first (the newest message first; the next one consumed is last)."""
    _print_lines(args, _list(args, client))
    return 0


def _purge_queue(args: argparse.Namespace, client: ClientProtocol) -> int:
    """rfq's purge: no confirmation; prints the ids purged, in rfq's order (the consume end first).

    The ids are listed, then ferroq's purge (which also clears the leases and delivery records) deletes the
    queue; a message that arrived in between is purged too and reported on stderr by count.
    """
    ids = _list(args, client)[::-1]
    purged = client.topic(args.topic).purge(args.queue)
    _print_lines(args, ids)
    if purged != len(ids):
        print(
            f'ferroq: {purged} messages purged, {len(ids)} listed just before (the {args.queue} changed meanwhile)',
            file=sys.stderr,
        )
    return 0


def _consume(args: argparse.Namespace, client: ClientProtocol) -> int:
    """Claim one message with a lease, print it as rfq prints it (a Python dict), then commit it.

    Waits for ever like rfq (or --block seconds: exit 1 with nothing printed when none came). Ctrl-C while
    waiting exits 0 with nothing printed, as rfq does. A message printed and not committed (its lease was
    lost) exits 1; it is delivered again after a harvest.
    """
    topic = client.topic(args.topic)
    remaining = args.block
    try:
        while True:
            wait = _CONSUME_SLICE if remaining is None else min(_CONSUME_SLICE, remaining)
            msgs = topic.claim(1, block=wait, lease=args.lease)
            if msgs:
                break
            if remaining is not None:
                remaining -= wait
                if remaining <= 0:
                    return 1
    except KeyboardInterrupt:
        return 0
    [msg] = msgs
    if args.json:
        record = {'id': msg.id, 'topic': msg.topic, 'fields': msg.fields, 'deliveries': msg.deliveries}
        print(json.dumps(record, ensure_ascii=False), flush=True)
    else:
        print(msg.fields, flush=True)
    if not topic.commit([msg]):
        raise FerroqError(f'message {msg.id} was printed but not committed: its lease expired and it was requeued')
    return 0


def completions(args: argparse.Namespace) -> int:
    print(f"complete -W '{' '.join(args.all_verbs)}' ferroq")
    return 0


def add_verbs(verb: Verb, number: Callable[[str], float]) -> None:
    """Add rfq's verbs that ferroq has no verb for (publish, harvest and peek are ferroq's own)."""
    verb('version', _version, "ferroq's and the Redis server's versions", topic=False)
    verb('info', _info, 'backlog and nextlog length of every topic, as rfq draws them', topic=False)
    verb('list-topics', _list_topics, 'list the topics (as `topics`)', topic=False)
    p = verb('list-queue', _list_queue, 'ids of a backlog or nextlog, head first (rfq order)')
    p.add_argument('-q', '--queue', choices=('backlog', 'nextlog'), default='backlog')
    p = verb('purge-queue', _purge_queue, 'delete a backlog or nextlog; prints the ids')
    p.add_argument('-q', '--queue', choices=('backlog', 'nextlog'), default='backlog')
    p = verb('consume', _consume, 'claim one message, print it, commit it (waits for one)')
    p.add_argument('--lease', type=number, default=30.0, help='lease while it is printed (default 30)')
    p.add_argument('--block', type=number, default=None, help='seconds to wait (default: for ever); exit 1 if none')
    p = verb('completions', completions, 'shell completion script', topic=False)
    p.add_argument('shell', choices=('bash',), help='shell to use')


def group_help(parser: argparse.ArgumentParser, verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Split the top-level help's command list: rfq's verbs first, then ferroq's (any verb added later too).

    Call it once every verb is added. The commands' help entries move from the positional arguments into two
    titled groups; parsing is unchanged.
    """
    entries: list[argparse.Action] = verbs._get_subactions()
    rfq = sorted((e for e in entries if e.dest in RFQ_VERBS), key=lambda e: RFQ_VERBS.index(e.dest))
    own = [e for e in entries if e.dest not in RFQ_VERBS]
    for group in parser._action_groups:
        if verbs in group._group_actions:
            group._group_actions.remove(verbs)
    parser.add_argument_group("rfq's commands (rfq 1.4's flags, output and exit statuses)")._group_actions += rfq
    parser.add_argument_group("ferroq's commands (COMMAND --help shows its options)")._group_actions += own
    parser.set_defaults(all_verbs=[e.dest for e in rfq + own])
