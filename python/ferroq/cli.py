"""The ``ferroq`` command: publish, claim, inspect and administer rfq topics, RSMQ queues (``ferroq rsmq
...``) and Streams topics (``ferroq stream ...``), and run the embedded server.

Uses the native client (``ferroq.Client``) unless ``--pure`` is given. Exit status: 0 on success,
2 for invalid input, 1 for any other error, 130 when interrupted.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable

from ferroq import _bulk, _cli_rfq, server
from ferroq.exceptions import BatchError, FerroqError, InvalidArgument
from ferroq.types import GroupInfo, Message, RsmqAttributes, RsmqMessage, StreamEntry, TopicStats

__all__ = ['main']

_PROG = 'ferroq'
_GLOBAL_WITH_VALUE = ('--url',)
_GLOBAL_FLAGS = ('--json', '--pure')


class _NotFound(FerroqError):
    """A CLI-level lookup found nothing (exit status 1)."""


if TYPE_CHECKING:
    from ferroq.typing import ClientProtocol, ConsumerGroupProtocol, RsmqQueueProtocol, StreamProtocol, TopicProtocol


#: Credentials and TLS: the global options and the client keyword arguments they set (no --password: argv is
#: visible to every user in ps; use --password-file or FERROQ_PASSWORD).
_CONNECTION_OPTIONS = {
    '--user': 'username',
    '--password-file': 'password_file',
    '--tls-ca-file': 'tls_ca_file',
    '--tls-cert-file': 'tls_cert_file',
    '--tls-key-file': 'tls_key_file',
}


def _connection_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    kwargs: dict[str, Any] = {k: getattr(args, k) for k in _CONNECTION_OPTIONS.values() if getattr(args, k, None)}
    if getattr(args, 'tls_insecure_skip_verify', False):
        kwargs['tls_insecure_skip_verify'] = True
    return kwargs


def _client(args: argparse.Namespace) -> ClientProtocol:
    if args.pure:
        from ferroq.pure import Client as PureClient

        return PureClient(args.url, **_connection_kwargs(args))
    from ferroq import Client

    return Client(args.url, **_connection_kwargs(args))


def _topic(args: argparse.Namespace, client: ClientProtocol) -> TopicProtocol:
    return client.topic(args.topic)


def _print_json(value: object) -> None:
    print(json.dumps(value, ensure_ascii=False))


def _time(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _lines(args: argparse.Namespace, items: Sequence[str]) -> None:
    """A list of ids: one per line, or a JSON array."""
    if args.json:
        _print_json(list(items))
    else:
        for item in items:
            print(item)


def _table(rows: list[list[str]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print('  '.join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())


# --- message input -------------------------------------------------------------------------------


def _message(text: str, where: str) -> dict[str, str]:
    """A message from a JSON object (numbers become their text, as rfq's CLI stored them)."""
    return _bulk.fields_from_json(text, where)


# --- verbs ---------------------------------------------------------------------------------------


def _cmd_topics(args: argparse.Namespace, client: ClientProtocol) -> int:
    _lines(args, client.topics())
    return 0


def _publish(args: argparse.Namespace, one: Callable[[dict[str, str]], str],
             batch: Callable[[list[dict[str, str]]], list[str]]) -> int:  # fmt: skip
    """publish -m (one message) or --stdin (one JSON object per line, one batch); prints the ids.

    --file is handled by the caller (chunks, a summary line).
    """
    if not args.stdin:
        _lines(args, [one(_message(args.message, '--message'))])
        return 0
    messages, lines = [], []
    for number, line in enumerate(sys.stdin, 1):
        if line.strip():
            messages.append(_message(line, f'line {number}'))
            lines.append(number)
    try:
        ids = batch(messages)
    except BatchError as exc:
        raise _bulk.lines_error(exc, lines, 'nothing was written') from None
    _lines(args, ids)
    return 0


def _message_source(p: argparse.ArgumentParser) -> None:
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument('-m', '--message', help='the message, a JSON object of string (or number) fields')
    source.add_argument('--stdin', action='store_true', help='read one JSON object per line from standard input')
    _bulk.add_file_options(source, p, 'one JSON object')


def _json_line(text: str, number: int) -> dict[str, str] | None:
    """A --file line of a topic or stream: a JSON object; blank lines are skipped."""
    return _message(text, f'line {number}') if text.strip() else None


def _cmd_publish(args: argparse.Namespace, client: ClientProtocol) -> int:
    topic = _topic(args, client)
    if args.file is not None:
        if args.front:
            raise InvalidArgument('--front cannot be used with --file (each chunk would go before the one before)')
        return _bulk.publish_file(args, f'topic {args.topic}', _json_line, topic.publish_batch)
    return _publish(
        args, lambda m: topic.publish(m, front=args.front), lambda ms: topic.publish_batch(ms, front=args.front)
    )


def _cmd_claim(args: argparse.Namespace, client: ClientProtocol) -> int:
    for msg in _topic(args, client).claim(args.count, block=args.block, lease=args.lease):
        _print_json({'id': msg.id, 'topic': msg.topic, 'fields': msg.fields, 'deliveries': msg.deliveries})
    return 0


def _report(args: argparse.Namespace, done: list[str], verb: str) -> int:
    _lines(args, done)
    missed = len(args.ids) - len(done)
    if missed:
        print(
            f'{_PROG}: {missed} of {len(args.ids)} ids were not {verb} (not claimed, or claimed again)', file=sys.stderr
        )
    return 0


def _cmd_commit(args: argparse.Namespace, client: ClientProtocol) -> int:
    return _report(args, _topic(args, client).commit(args.ids), 'committed')


def _cmd_release(args: argparse.Namespace, client: ClientProtocol) -> int:
    return _report(args, _topic(args, client).release(args.ids), 'released')


def _cmd_extend(args: argparse.Namespace, client: ClientProtocol) -> int:
    return _report(args, _topic(args, client).extend(args.ids, lease=args.lease), 'extended')


def _cmd_harvest(args: argparse.Namespace, client: ClientProtocol) -> int:
    if args.all and not args.yes:
        raise InvalidArgument('harvest --all requeues messages that consumers may still be processing; add --yes')
    _lines(args, _topic(args, client).harvest(all=args.all, lease=args.lease))
    return 0


def _cmd_peek(args: argparse.Namespace, client: ClientProtocol) -> int:
    msg_id = args.msgid if args.msgid is not None else args.id
    fields = _topic(args, client).peek(msg_id)
    if fields is None:
        raise _NotFound(f'message {msg_id!r} not found in topic {args.topic!r}')
    print(json.dumps(fields))  # as rfq prints it (ASCII, with escapes)
    return 0


def _cmd_inspect(args: argparse.Namespace, client: ClientProtocol) -> int:
    entries = _topic(args, client).inspect(args.queue, start=args.start, count=args.count)
    records = [
        {
            'id': e.id,
            'fields': e.fields,
            'deliveries': e.deliveries,
            'claimed_at': _time(e.claimed_at),
            'lease_deadline': _time(e.lease_deadline),
            'published': _time(e.published),
            'owner': e.owner,
            'error': e.error,
        }
        for e in entries
    ]
    if args.json:
        _print_json(records)
    elif records:
        rows = [['ID', 'DELIVERIES', 'PUBLISHED', 'CLAIMED_AT', 'LEASE_DEADLINE', 'FIELDS']]
        for r in records:
            cells = [r['id'], r['deliveries'], r['published'], r['claimed_at'], r['lease_deadline']]
            fields = json.dumps(r['fields'], ensure_ascii=False) if r['fields'] is not None else '(missing)'
            rows.append(['-' if c is None else str(c) for c in cells] + [fields])
        _table(rows)
    return 0


def _cmd_stats(args: argparse.Namespace, client: ClientProtocol) -> int:
    names = [args.topic] if args.topic else client.topics()
    stats = [client.topic(name).stats() for name in names]
    if args.json:
        _print_json([_stats_dict(s) for s in stats])
        return 0
    rows = [['TOPIC', 'BACKLOG', 'NEXTLOG', 'LEASED', 'EXPIRED', 'DELAYED', 'OLDEST_AGE']]
    for s in stats:
        age = '-' if s.oldest_age is None else f'{s.oldest_age:.1f}s'
        rows.append([s.topic, str(s.backlog), str(s.nextlog), str(s.leased), str(s.expired), str(s.delayed), age])
    _table(rows)
    return 0


def _attrs(value: object, *names: str) -> dict[str, object]:
    """The attributes ``names`` of ``value``, in that order: its JSON record."""
    return {name: getattr(value, name) for name in names}


def _stats_dict(s: TopicStats) -> dict[str, object]:
    return _attrs(s, 'topic', 'backlog', 'nextlog', 'leased', 'expired', 'delayed', 'oldest_age')


def _cmd_purge(args: argparse.Namespace, client: ClientProtocol) -> int:
    if not args.yes:
        raise InvalidArgument(f'purge deletes every message of the {args.queue} of {args.topic!r}; add --yes')
    n = _topic(args, client).purge(args.queue)
    if args.json:
        _print_json({'topic': args.topic, 'queue': args.queue, 'purged': n})
    else:
        print(f'purged {n} messages from the {args.queue} of {args.topic}')
    return 0


# --- RSMQ verbs: ferroq rsmq <action> ----------------------------------------------------------


def _queue(args: argparse.Namespace, client: ClientProtocol) -> RsmqQueueProtocol:
    return client.rsmq(args.queue, ns=args.ns, realtime=getattr(args, 'realtime', False))


def _attributes_dict(name: str, a: RsmqAttributes) -> dict[str, object]:
    return {
        'queue': name,
        'vt': a.vt,
        'delay': a.delay,
        'maxsize': a.maxsize,
        'totalrecv': a.totalrecv,
        'totalsent': a.totalsent,
        'created': a.created,
        'modified': a.modified,
        'msgs': a.msgs,
        'hiddenmsgs': a.hiddenmsgs,
        'max_receives': a.max_receives,
        'dead_letter': a.dead_letter,
    }


def _print_attributes(args: argparse.Namespace, records: list[dict[str, object]]) -> None:
    if args.json:
        _print_json(records)
        return
    rows = [['QUEUE', 'MSGS', 'HIDDEN', 'SENT', 'RECEIVED', 'VT', 'DELAY', 'MAXSIZE', 'DEAD_LETTER']]
    for a in records:
        dead = '-' if a['dead_letter'] is None else f'{a["dead_letter"]} after {a["max_receives"]}'
        keys = ('queue', 'msgs', 'hiddenmsgs', 'totalsent', 'totalrecv', 'vt', 'delay', 'maxsize')
        rows.append([f'{a[k]:g}' if isinstance(a[k], float) else str(a[k]) for k in keys] + [dead])
    _table(rows)


def _rsmq_queues(args: argparse.Namespace, client: ClientProtocol) -> int:
    _lines(args, client.rsmq_queues(ns=args.ns))
    return 0


def _rsmq_create(args: argparse.Namespace, client: ClientProtocol) -> int:
    _queue(args, client).create(
        vt=args.vt, delay=args.delay, maxsize=args.maxsize, max_receives=args.max_receives, dead_letter=args.dead_letter
    )
    return 0


def _rsmq_delete_queue(args: argparse.Namespace, client: ClientProtocol) -> int:
    if not args.yes:
        raise InvalidArgument(f'delete-queue deletes {args.queue!r} and every message in it; add --yes')
    _queue(args, client).delete_queue()
    return 0


def _rsmq_attributes(args: argparse.Namespace, client: ClientProtocol) -> int:
    names = [args.queue] if args.queue else client.rsmq_queues(ns=args.ns)
    records = [_attributes_dict(name, client.rsmq(name, ns=args.ns).attributes()) for name in names]
    _print_attributes(args, records)
    return 0


def _rsmq_set_attributes(args: argparse.Namespace, client: ClientProtocol) -> int:
    attrs = _queue(args, client).set_attributes(
        vt=args.vt, delay=args.delay, maxsize=args.maxsize, max_receives=args.max_receives, dead_letter=args.dead_letter
    )
    _print_attributes(args, [_attributes_dict(args.queue, attrs)])
    return 0


def _rsmq_send(args: argparse.Namespace, client: ClientProtocol) -> int:
    queue = _queue(args, client)
    if args.file is not None:
        return _bulk.publish_file(
            args, f'RSMQ queue {args.queue}', lambda text, _: text, lambda ms: queue.send_batch(ms, delay=args.delay)
        )
    if not args.stdin:
        _lines(args, [queue.send(args.message, delay=args.delay)])
        return 0
    _lines(args, queue.send_batch([line.rstrip('\r\n') for line in sys.stdin], delay=args.delay))
    return 0


def _message_dict(m: RsmqMessage) -> dict[str, object]:
    return {'id': m.id, 'message': m.message, 'rc': m.rc, 'fr': m.fr, 'sent': m.sent}


def _rsmq_receive(args: argparse.Namespace, client: ClientProtocol) -> int:
    for m in _queue(args, client).receive_batch(args.count, vt=args.vt, block=args.block):
        _print_json(_message_dict(m))
    return 0


def _rsmq_pop(args: argparse.Namespace, client: ClientProtocol) -> int:
    for m in _queue(args, client).pop_batch(args.count):
        _print_json(_message_dict(m))
    return 0


def _rsmq_delete(args: argparse.Namespace, client: ClientProtocol) -> int:
    done = _queue(args, client).delete_batch(args.ids)
    _lines(args, done)
    missed = len(args.ids) - len(done)
    if missed:
        print(f'{_PROG}: {missed} of {len(args.ids)} ids were not in {args.queue!r}', file=sys.stderr)
    return 0


def _rsmq_visibility(args: argparse.Namespace, client: ClientProtocol) -> int:
    if not _queue(args, client).change_visibility(args.id, args.vt):
        raise _NotFound(f'message {args.id!r} not found in RSMQ queue {args.queue!r}')
    return 0


def _rsmq_parser(verbs: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    ns = argparse.ArgumentParser(add_help=False)
    ns.add_argument('--ns', default='rsmq', help='RSMQ namespace (default rsmq)')
    text = 'RSMQ queues (smrchy/rsmq and PyRSMQ compatible)'
    p = verbs.add_parser('rsmq', help=text, description=text, parents=[common])
    actions = p.add_subparsers(dest='action', metavar='ACTION', required=True)

    def action(name: str, func: Callable[..., int], help: str, queue: bool | None = True) -> argparse.ArgumentParser:
        """``queue``: True a required -q, None an optional one, False none."""
        a = actions.add_parser(name, help=help, description=help, parents=[common, ns])
        a.set_defaults(func=func)
        if queue is not False:
            a.add_argument('-q', '--queue', required=bool(queue), help='queue name')
        return a

    def settings(a: argparse.ArgumentParser, defaults: bool) -> None:
        a.add_argument('--vt', type=int, default=30 if defaults else None, help='visibility timeout, seconds')
        a.add_argument('--delay', type=int, default=0 if defaults else None, help='delay of new messages, seconds')
        a.add_argument('--maxsize', type=int, default=65536 if defaults else None, help='1024-65536, or -1')
        a.add_argument('--max-receives', type=int, help='receives before a message moves to --dead-letter')
        a.add_argument('--dead-letter', help='dead-letter queue (same namespace)')

    action('queues', _rsmq_queues, 'list the queues', queue=False)
    settings(action('create', _rsmq_create, 'create a queue'), defaults=True)
    a = action('delete-queue', _rsmq_delete_queue, 'delete a queue and its messages')
    a.add_argument('--yes', action='store_true', help='confirm')
    action('attributes', _rsmq_attributes, 'attributes and message counts', queue=None)
    settings(action('set-attributes', _rsmq_set_attributes, 'change queue attributes'), defaults=False)

    a = action('send', _rsmq_send, 'send messages; prints their ids')
    source = a.add_mutually_exclusive_group(required=True)
    source.add_argument('-m', '--message', help='the message text')
    source.add_argument('--stdin', action='store_true', help='send each line of standard input as a message')
    _bulk.add_file_options(source, a, 'one message')
    a.add_argument('--delay', type=_number, default=None, help="seconds before it is visible (default: the queue's)")
    a.add_argument('--realtime', action='store_true', help='PUBLISH the queue size on {ns}:rt:{queue}')

    a = action('receive', _rsmq_receive, 'receive messages (one JSON object per message)')
    a.add_argument('-n', '--count', type=int, default=1, help='most messages (default 1)')
    a.add_argument('--vt', type=_number, default=None, help="hide them for this many seconds (default: the queue's)")
    a.add_argument('--block', type=_number, default=None, help='seconds to wait for a message (default: none)')

    a = action('pop', _rsmq_pop, 'receive and delete messages (one JSON object per message)')
    a.add_argument('-n', '--count', type=int, default=1, help='most messages (default 1)')

    a = action('delete', _rsmq_delete, 'delete messages; prints the ids deleted')
    a.add_argument('ids', nargs='+', metavar='ID', help='message id')

    a = action('visibility', _rsmq_visibility, 'hide a message for --vt seconds from now')
    a.add_argument('--vt', type=_number, required=True, help='seconds')
    a.add_argument('id', metavar='ID', help='message id')


# --- Streams verbs: ferroq stream <action> -----------------------------------------------------


def _stream(args: argparse.Namespace, client: ClientProtocol) -> StreamProtocol:
    return client.stream(args.stream)


def _group(args: argparse.Namespace, client: ClientProtocol) -> ConsumerGroupProtocol:
    return _stream(args, client).group(
        args.group,
        getattr(args, 'consumer', None),
        max_deliveries=getattr(args, 'max_deliveries', None),
        dead_letter=getattr(args, 'dead_letter', None),
    )


def _position(text: str) -> str | datetime:
    """A stream position: an entry id, '-', '+', '$', '0', or an ISO 8601 time with its offset (Z for UTC)."""
    if 'T' not in text:
        return text
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'not an entry id nor an ISO 8601 time: {text!r}') from None


def _retention(args: argparse.Namespace) -> dict[str, Any]:
    return {'maxlen': args.maxlen, 'max_age': args.max_age, 'approximate': not args.exact}


def _entry_dict(e: StreamEntry) -> dict[str, object]:
    return {'id': e.id, 'stream': e.stream, 'fields': e.fields, 'deliveries': e.deliveries}


def _print_entries(entries: Sequence[StreamEntry]) -> None:
    for e in entries:
        _print_json(_entry_dict(e))


def _stream_list(args: argparse.Namespace, client: ClientProtocol) -> int:
    _lines(args, client.streams())
    return 0


def _stream_publish(args: argparse.Namespace, client: ClientProtocol) -> int:
    stream, retention = _stream(args, client), _retention(args)
    if args.file is not None:
        return _bulk.publish_file(
            args, f'stream {args.stream}', _json_line, lambda ms: stream.publish_batch(ms, **retention)
        )
    return _publish(args, lambda m: stream.publish(m, **retention), lambda ms: stream.publish_batch(ms, **retention))


def _stream_range(args: argparse.Namespace, client: ClientProtocol) -> int:
    _print_entries(_stream(args, client).range(args.start, args.end, count=args.count))
    return 0


def _stream_info(args: argparse.Namespace, client: ClientProtocol) -> int:
    i = _stream(args, client).info()
    record = {'stream': i.name, 'length': i.length, 'first_id': i.first_id, 'last_id': i.last_id, 'groups': i.groups}
    if args.json:
        _print_json(record)
    else:
        for key, value in record.items():
            print(f'{key}: {"-" if value is None else value}')
    return 0


def _group_dict(g: GroupInfo) -> dict[str, object]:
    return {'group': g.name, **_attrs(g, 'consumers', 'pending', 'last_delivered_id', 'entries_read', 'lag')}


def _stream_groups(args: argparse.Namespace, client: ClientProtocol) -> int:
    records = [_group_dict(g) for g in _stream(args, client).groups()]
    if args.json:
        _print_json(records)
    elif records:
        rows = [['GROUP', 'CONSUMERS', 'PENDING', 'LAST_DELIVERED_ID', 'ENTRIES_READ', 'LAG']]
        rows += [['-' if v is None else str(v) for v in r.values()] for r in records]
        _table(rows)
    return 0


def _stream_trim(args: argparse.Namespace, client: ClientProtocol) -> int:
    n = _stream(args, client).trim(**_retention(args))
    if args.json:
        _print_json({'stream': args.stream, 'trimmed': n})
    else:
        print(f'trimmed {n} entries from {args.stream}')
    return 0


def _stream_delete(args: argparse.Namespace, client: ClientProtocol) -> int:
    if not args.yes:
        raise InvalidArgument(f'delete removes the stream {args.stream!r}, its entries and its groups; add --yes')
    if not _stream(args, client).delete():
        raise _NotFound(f'stream {args.stream!r} not found')
    return 0


def _stream_create_group(args: argparse.Namespace, client: ClientProtocol) -> int:
    created = _group(args, client).create(args.start, exist_ok=not args.strict)
    if not created:
        print(f'{_PROG}: group {args.group!r} of {args.stream!r} exists already', file=sys.stderr)
    return 0


def _stream_delete_group(args: argparse.Namespace, client: ClientProtocol) -> int:
    if not _group(args, client).delete():
        raise _NotFound(f'group {args.group!r} of stream {args.stream!r} not found')
    return 0


def _stream_read(args: argparse.Namespace, client: ClientProtocol) -> int:
    _print_entries(_group(args, client).read(args.count, block=args.block))
    return 0


def _stream_ack(args: argparse.Namespace, client: ClientProtocol) -> int:
    return _report(args, _group(args, client).ack(args.ids), 'acknowledged')


def _stream_dead_letter(args: argparse.Namespace, client: ClientProtocol) -> int:
    return _report(args, _group(args, client).dead_letter(args.ids, error=args.error), 'dead-lettered')


def _stream_pending(args: argparse.Namespace, client: ClientProtocol) -> int:
    group = _group(args, client)
    entries = group.pending(args.count, consumer=args.owner, min_idle=args.min_idle)
    records = [{'id': p.id, 'consumer': p.consumer, 'idle': p.idle, 'deliveries': p.deliveries} for p in entries]
    if args.json:
        _print_json(records)
    elif records:
        rows = [['ID', 'CONSUMER', 'IDLE', 'DELIVERIES']]
        rows += [[p.id, p.consumer, f'{p.idle:.1f}s', str(p.deliveries)] for p in entries]
        _table(rows)
    return 0


def _stream_autoclaim(args: argparse.Namespace, client: ClientProtocol) -> int:
    _print_entries(_group(args, client).autoclaim(args.min_idle, args.count, error=args.error))
    return 0


def _stream_seek(args: argparse.Namespace, client: ClientProtocol) -> int:
    _group(args, client).seek(args.position)
    return 0


def _stream_parser(verbs: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    text = 'Streams topics: replayable topics with consumer groups (Redis Streams)'
    p = verbs.add_parser('stream', help=text, description=text, parents=[common])
    actions = p.add_subparsers(dest='action', metavar='ACTION', required=True)

    def action(
        name: str, func: Callable[..., int], help: str, group: bool = False, stream: bool = True
    ) -> argparse.ArgumentParser:
        a = actions.add_parser(name, help=help, description=help, parents=[common])
        a.set_defaults(func=func)
        if stream:
            a.add_argument('-s', '--stream', required=True, help='stream name')
        if group:
            a.add_argument('-g', '--group', required=True, help='consumer group')
            a.add_argument('-c', '--consumer', default=None, help='consumer name (default <hostname>-<pid>)')
        return a

    def retention(a: argparse.ArgumentParser, required: bool) -> None:
        keep = a.add_mutually_exclusive_group(required=required)
        keep.add_argument('--maxlen', type=int, default=None, help='keep about the newest N entries')
        keep.add_argument('--max-age', type=_number, default=None, help='drop entries older than this many seconds')
        a.add_argument('--exact', action='store_true', help='trim exactly (default: approximately, cheaper)')

    action('list', _stream_list, 'list the streams (dead-letter streams included)', stream=False)
    a = action('publish', _stream_publish, 'append messages; prints their ids')
    _message_source(a)
    retention(a, required=False)
    a = action('range', _stream_range, 'list entries by id or time, without a group (one JSON object each)')
    a.add_argument(
        '--start', type=_position, default='-', help="first id or ISO time ('-': the oldest; '(' + id: after it)"
    )
    a.add_argument('--end', type=_position, default='+', help="last id or ISO time ('+': the newest)")
    a.add_argument('-n', '--count', type=int, default=100, help='most entries (default 100)')
    action('info', _stream_info, 'length, first and last ids, number of groups')
    action('groups', _stream_groups, 'the consumer groups: consumers, pending, offset, lag')
    retention(action('trim', _stream_trim, 'drop old entries'), required=True)
    a = action('delete', _stream_delete, 'delete the stream, its entries and its groups')
    a.add_argument('--yes', action='store_true', help='confirm')

    a = action('create-group', _stream_create_group, 'create a consumer group', group=True)
    a.add_argument('--start', type=_position, default='$',
                   help="where it starts reading: '$' new entries (default), '0' the beginning, an id or ISO time")  # fmt: skip
    a.add_argument('--strict', action='store_true', help='fail if the group exists')
    action('delete-group', _stream_delete_group, 'delete a consumer group', group=True)
    a = action('read', _stream_read, 'read new entries for a consumer (one JSON object each)', group=True)
    a.add_argument('-n', '--count', type=int, default=1, help='most entries (default 1)')
    a.add_argument('--block', type=_number, default=None, help='seconds to wait for an entry (default: none)')
    a = action('ack', _stream_ack, 'acknowledge entries; prints the ids acknowledged', group=True)
    a.add_argument('ids', nargs='+', metavar='ID', help='entry id')
    a = action('pending', _stream_pending, 'entries delivered and not acknowledged, with delivery counts', group=True)
    a.add_argument('-n', '--count', type=int, default=100, help='most entries (default 100)')
    a.add_argument('--owner', default=None, help="only this consumer's entries")
    a.add_argument('--min-idle', type=_number, default=None, help='only entries idle this many seconds')
    a = action('autoclaim', _stream_autoclaim, 'take over entries idle for --min-idle seconds', group=True)
    a.add_argument('--min-idle', type=_number, required=True, help='seconds')
    a.add_argument('-n', '--count', type=int, default=100, help='most entries (default 100)')
    a.add_argument('--max-deliveries', type=int, default=None, help='dead-letter entries delivered this often')
    a.add_argument('--dead-letter', default=None, help='dead-letter stream (default <stream>.dead)')
    a.add_argument('--error', default='', help='error text recorded in dead-lettered entries')
    a = action('dead-letter', _stream_dead_letter, 'move pending entries to the dead-letter stream', group=True)
    a.add_argument('--dead-letter', default=None, help='dead-letter stream (default <stream>.dead)')
    a.add_argument('--error', default='', help='error text recorded with them')
    a.add_argument('ids', nargs='+', metavar='ID', help='entry id')
    a = action(
        'seek', _stream_seek, "move the group's offset: replay from an id or time, or skip to the end", group=True
    )
    a.add_argument('position', type=_position, help="'0' (the beginning), '$' (the end), an entry id or an ISO time")


class CommandFailed(Exception):
    """The command of ``ferroq worker`` exited with a non-zero status (the message is retried)."""


def _run_command(command: list[str], msg: Message) -> None:
    """The handler of ``ferroq worker``: the message as one JSON object on stdin; exit status 0 commits."""
    payload = {'id': msg.id, 'topic': msg.topic, 'fields': msg.fields, 'deliveries': msg.deliveries}
    proc = subprocess.run(
        command, input=json.dumps(payload, ensure_ascii=False) + '\n', text=True, stderr=subprocess.PIPE, check=False
    )
    if proc.stderr:
        sys.stderr.write(proc.stderr)  # passed through, and its last line is kept as the error
    if proc.returncode != 0:
        how = f'status {proc.returncode}' if proc.returncode > 0 else f'signal {-proc.returncode}'
        last = proc.stderr.strip().splitlines()[-1:] if proc.stderr else []
        raise CommandFailed(f'{command[0]} exited with {how}' + (f': {last[0]}' if last else ''))


def _cmd_worker(args: argparse.Namespace, client: ClientProtocol) -> int:
    from ferroq.worker import Worker

    command = args.command[1:] if args.command[:1] == ['--'] else args.command
    if not command:
        raise InvalidArgument('worker needs a command after --, e.g. ferroq worker -t jobs -- ./handle.sh')
    if shutil.which(command[0]) is None:
        raise InvalidArgument(f'command not found: {command[0]!r}')
    worker = Worker(
        client,
        args.topic,
        lambda msg: _run_command(command, msg),
        concurrency=args.concurrency,
        prefetch=args.prefetch,
        lease=args.lease,
        max_deliveries=args.max_deliveries,
        retry_delay=args.retry_delay,
        retry_backoff=args.retry_backoff,
        max_retry_delay=args.max_retry_delay,
        dead_letter=args.dead_letter,
        name=args.name,
        poll=args.poll,
        harvest_interval=args.harvest_interval or None,
        burst=args.burst,
    )
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format=f'{_PROG} worker: %(levelname)s %(message)s')
    stats = worker.run()
    if args.json:
        _print_json(dataclasses.asdict(stats))
    return 0


def _cmd_server(args: argparse.Namespace) -> int:
    if args.port is not None and args.action != 'start':
        raise InvalidArgument('--port goes with server start')
    if args.action == 'start':
        server.ensure_embedded(port=args.port)
        _lines(args, server.embedded_urls())
    elif args.action == 'stop':
        stopped = server.stop_embedded()
        if args.json:
            _print_json({'stopped': stopped})
        else:
            print('stopped' if stopped else 'not running')
    elif args.action == 'status':
        status = server.embedded_status()
        if args.json:
            _print_json(status)
        else:
            for key, value in status.items():
                print(f'{key}: {"-" if value is None else value}')
    else:
        url = server.resolve_url(args.url)
        urls = server.embedded_urls()
        _lines(args, urls if url == urls[0] else [server.redact_url(url)])  # the embedded one: socket and TCP
    return 0


def _cmd_top(args: argparse.Namespace) -> int:
    from ferroq import _top

    return _top.run(args.url, interval=args.interval, match=args.filter, once=args.once, as_json=args.json)


def _cmd_metrics(args: argparse.Namespace) -> int:
    from ferroq import _metrics

    return _metrics.serve(args.url, args.port, args.bind)


def _cmd_spark_release(args: argparse.Namespace, client: ClientProtocol) -> int:
    from ferroq.spark import release

    if not args.yes:
        raise InvalidArgument(
            f'spark-release gives the messages that consumer {args.consumer!r} of {args.topic!r} holds back to the '
            'backlog; a live query reading them would lose its batch: add --yes'
        )
    n = release(server.resolve_url(args.url), args.topic, args.consumer, force=args.force, **_connection_kwargs(args))
    if args.json:
        _print_json({'topic': args.topic, 'consumer': args.consumer, 'released': n})
    else:
        print(f'released {n} messages of {args.topic} held by Spark consumer {args.consumer}')
    return 0


# --- parser --------------------------------------------------------------------------------------


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'not a number: {text!r}') from None


def _parser() -> argparse.ArgumentParser:
    # Global options are accepted before or after the verb; SUPPRESS keeps a verb's copy from resetting them.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument('--url', default=argparse.SUPPRESS, help='redis://, rediss:// or unix:// URL (default: '
                        'FERROQ_URL, then RFQ_REDIS_HOST/PORT, then the embedded server)')  # fmt: skip
    common.add_argument('--json', action='store_true', default=argparse.SUPPRESS, help='machine-readable output')
    common.add_argument('--pure', action='store_true', default=argparse.SUPPRESS, help='use the pure-Python client')
    for flag, text in (
        ('--user', 'Redis ACL user (default FERROQ_USERNAME)'),
        ('--password-file', 'file holding the password (default FERROQ_PASSWORD, FERROQ_PASSWORD_FILE)'),
        ('--tls-ca-file', 'PEM CA that signed the server certificate, rediss:// (default FERROQ_TLS_CA_FILE)'),
        ('--tls-cert-file', 'PEM client certificate for mTLS (default FERROQ_TLS_CERT_FILE)'),
        ('--tls-key-file', 'PEM key of the client certificate (default FERROQ_TLS_KEY_FILE)'),
    ):
        common.add_argument(flag, default=argparse.SUPPRESS, help=text)
    common.add_argument('--tls-insecure-skip-verify', action='store_true', default=argparse.SUPPRESS,
                        help='DANGER: do not check the server certificate or host name')  # fmt: skip
    parser = argparse.ArgumentParser(prog=_PROG, description='Reliable message queues on Redis.', parents=[common])
    verbs = parser.add_subparsers(dest='verb', metavar='COMMAND')

    def verb(name: str, func: Callable[..., int], help: str, topic: bool = True) -> argparse.ArgumentParser:
        p = verbs.add_parser(name, help=help, description=help, parents=[common])
        p.set_defaults(func=func)
        if topic:
            p.add_argument('-t', '--topic', required=True, help='topic name')
        return p

    verb('topics', _cmd_topics, 'list the topics', topic=False)
    _cli_rfq.add_verbs(verb, _number)

    p = verb('publish', _cmd_publish, 'publish messages (-m JSON, --stdin, --file PATH)')
    _message_source(p)
    p.add_argument('-f', '--front', action='store_true', help='put the messages before everything waiting')

    p = verb('claim', _cmd_claim, 'claim messages (one JSON object per message)')
    p.add_argument('-n', '--count', type=int, default=1, help='most messages to claim (default 1)')
    p.add_argument('--block', type=_number, default=None, help='seconds to wait for a message (default: none)')
    p.add_argument('--lease', type=_number, default=30.0, help='lease in seconds (default 30)')

    for name, func, text in (
        ('commit', _cmd_commit, 'delete processed messages'),
        ('release', _cmd_release, 'give claimed messages back to the front of the backlog'),
        ('extend', _cmd_extend, 'renew the lease of claimed messages'),
    ):
        p = verb(name, func, text)
        if name == 'extend':
            p.add_argument('--lease', type=_number, default=30.0, help='new lease in seconds (default 30)')
        p.add_argument('ids', nargs='+', metavar='ID', help='message id')

    p = verb('harvest', _cmd_harvest, 'requeue claims whose lease expired')
    p.add_argument('--all', action='store_true', help="requeue every claim (rfq's blind harvest; needs --yes)")
    p.add_argument('--yes', action='store_true', help='confirm --all')
    p.add_argument('--lease', type=_number, default=30.0, help='lease given to claims that have none (default 30)')

    p = verb('peek', _cmd_peek, 'show the fields of a message (status 1: none)')
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument('id', metavar='ID', nargs='?', help='message id')
    which.add_argument('-m', '--msgid', help='message id (as rfq spells it)')

    p = verb('inspect', _cmd_inspect, 'list the backlog or nextlog in consumption order')
    p.add_argument('-q', '--queue', choices=('backlog', 'nextlog'), default='backlog')
    p.add_argument('--start', type=int, default=0, help='entries to skip (default 0)')
    p.add_argument('-n', '--count', type=int, default=100, help='entries to show (default 100)')

    p = verb('stats', _cmd_stats, 'queue lengths, leases and the oldest message age', topic=False)
    p.add_argument('-t', '--topic', help='one topic (default: all)')

    p = verb('purge', _cmd_purge, 'delete every message of a backlog or nextlog')
    p.add_argument('-q', '--queue', choices=('backlog', 'nextlog'), default='backlog')
    p.add_argument('--yes', action='store_true', help='confirm')

    p = verb('worker', _cmd_worker, 'run COMMAND for every message (the message as JSON on stdin)', topic=False)
    p.add_argument('-t', '--topic', action='append', required=True,
                   help='topic to consume; repeat for several, in priority order')  # fmt: skip
    p.add_argument('--burst', action='store_true', help='exit once nothing is waiting, in flight or delayed')
    p.add_argument('--concurrency', type=int, default=1, help='commands running at once (default 1)')
    p.add_argument('--prefetch', type=int, default=None, help='messages claimed ahead (default 2 x concurrency, >= 10)')
    p.add_argument('--lease', type=_number, default=30.0, help='lease in seconds, renewed while running (default 30)')
    p.add_argument('--max-deliveries', type=int, default=5, help='deliveries before dead-lettering (default 5)')
    p.add_argument('--retry-delay', type=_number, default=1.0, help='seconds before the first retry (default 1)')
    p.add_argument('--retry-backoff', type=_number, default=2.0, help='factor between retries (default 2)')
    p.add_argument('--max-retry-delay', type=_number, default=300.0, help='longest retry delay (default 300)')
    p.add_argument('--dead-letter', metavar='TOPIC', default=None, help='dead-letter topic (default <topic>.dead)')
    p.add_argument('--name', default=None, help='worker name: own a processing list and resume it at start')
    p.add_argument('--poll', type=_number, default=1.0, help='seconds an idle worker waits per claim (default 1)')
    p.add_argument('--harvest-interval', type=_number, default=10.0,
                   help='seconds between harvests of expired claims; 0 = none (default 10)')  # fmt: skip
    p.add_argument('command', nargs=argparse.REMAINDER, metavar='-- COMMAND [ARGS...]',
                   help='run once per message; exit 0 commits, anything else retries')  # fmt: skip

    _rsmq_parser(verbs, common)
    _stream_parser(verbs, common)

    p = verb('spark-release', _cmd_spark_release, 'give back what a retired Spark streaming query still holds')
    p.add_argument('-c', '--consumer', default='spark', help="the query's consumer option (default spark)")
    p.add_argument('--force', action='store_true', help="release even though the consumer's lock is there")
    p.add_argument('--yes', action='store_true', help='confirm')

    p = verb('server', _cmd_server, 'manage the embedded redis-server', topic=False)
    p.add_argument('action', choices=('start', 'stop', 'status', 'url'))
    p.add_argument('--port', type=int, default=None,
                   help='start: also listen on this TCP port of 127.0.0.1 (kept until server stop)')  # fmt: skip

    p = verb('top', _cmd_top, 'live view of every topic, RSMQ queue and stream (a table when not on a terminal)',
             topic=False)  # fmt: skip
    p.add_argument('--interval', type=_number, default=1.0, help='seconds between refreshes (default 1)')
    p.add_argument('--filter', default='', help='show only names containing this text')
    p.add_argument('--once', action='store_true', help='print one table and exit, even on a terminal')

    p = verb('metrics', _cmd_metrics, "serve every queue's figures to Prometheus (/metrics)", topic=False)
    p.add_argument('--port', type=int, required=True, help='HTTP port')
    p.add_argument('--bind', default='127.0.0.1', help='address to listen on (default 127.0.0.1)')

    verbs.add_parser('bench', help='run the load generator (see ferroq bench --help)', add_help=False)
    _cli_rfq.group_help(parser, verbs)
    return parser


def _bench_args(argv: list[str]) -> list[str] | None:
    """The arguments after ``bench`` if it is the verb (they go to ferroq.bench untouched), else None."""
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in _GLOBAL_WITH_VALUE:
            i += 2
        elif arg in _GLOBAL_FLAGS or arg.startswith(tuple(f'{o}=' for o in _GLOBAL_WITH_VALUE)):
            i += 1
        else:
            return argv[i + 1 :] if arg == 'bench' else None
    return None


def _run(argv: list[str]) -> int:
    bench_args = _bench_args(argv)
    if bench_args is not None:
        try:
            bench = importlib.import_module('ferroq.bench')  # lazily: only this verb needs it
        except ModuleNotFoundError as exc:
            raise FerroqError(f'the bench command is not available: {exc}') from None

        head = argv[: len(argv) - len(bench_args) - 1]
        url = [head[i + 1] for i, a in enumerate(head[:-1]) if a == '--url']
        url += [a.split('=', 1)[1] for a in head if a.startswith('--url=')]
        result: int | None = bench.main((['--url', url[-1]] if url else []) + bench_args)
        return result or 0
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse printed usage or help
        return exc.code if isinstance(exc.code, int) else 0
    for name, default in (('url', None), ('json', False), ('pure', False), ('tls_insecure_skip_verify', False)):
        if not hasattr(args, name):  # not given before nor after the verb
            setattr(args, name, default)
    if args.verb is None:
        parser.print_help(sys.stderr)
        return 2
    if args.verb in ('server', 'top', 'metrics'):  # no client: they resolve the URL themselves
        func: Callable[[argparse.Namespace], int] = args.func
        return func(args)
    if args.verb == 'completions':
        return _cli_rfq.completions(args)
    client = _client(args)
    try:
        code: int = args.func(args, client)
        return code
    finally:
        client.close()


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    try:
        return _run(sys.argv[1:] if argv is None else list(argv))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (| head): stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except FerroqError as exc:
        print(f'{_PROG}: error: {exc}', file=sys.stderr)
        return 2 if isinstance(exc, ValueError) else 1
