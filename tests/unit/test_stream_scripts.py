"""The Streams topic scripts (``lua/streams/``) on a real redis-server, called as any client will call them.

The clients' Stream and StreamGroup objects build on these scripts; this file pins the scripts' own
contract (KEYS, ARGV, replies, the state they leave), documented in each script's header.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
import redis

from ferroq import protocol
from ferroq.protocol import keys

S = keys.stream_key('ev')
DEAD = keys.stream_key('ev.dead')  # a stream's default dead-letter stream (docs/protocol.md)
TTL = str(keys.STREAM_PUBLISH_TOKEN_MS)


def run(r: redis.Redis, name: str, script_keys: list[str], args: list[Any]) -> Any:
    return r.eval(protocol.script_source(f'streams/{name}'), len(script_keys), *script_keys, *args)


def publish(r: redis.Redis, token: str, *messages: dict[str, str], retention: tuple[str, str, str] = ('', '', '~')):
    args: list[Any] = [TTL, *retention]
    for m in messages:
        args.append(len(m))
        for k, v in m.items():
            args += [k, v]
    status, ids = run(r, 'publish-2', [S, keys.stream_published('ev', token)], args)
    assert status in ('ok', 'done')
    return ids


def test_publish_appends_in_order_once_per_token(r: redis.Redis) -> None:
    ids = publish(r, 't1', {'a': '1'}, {'b': '2', 'c': '3'})
    assert [e[0] for e in r.xrange(S)] == ids and len(ids) == 2
    assert [e[1] for e in r.xrange(S)] == [{'a': '1'}, {'b': '2', 'c': '3'}]
    # a resend with the same token (a retry after a dropped reply) appends nothing and returns the first ids
    assert publish(r, 't1', {'x': 'y'}) == ids and r.xlen(S) == 2
    assert run(r, 'publish-2', [S, keys.stream_published('ev', 't1')], [TTL, '', '', '~', 1, 'x', 'y'])[0] == 'done'
    assert 0 < r.pttl(keys.stream_published('ev', 't1')) <= keys.STREAM_PUBLISH_TOKEN_MS
    assert publish(r, 't2', {'x': 'y'}) != ids and r.xlen(S) == 3


def test_publish_trims_to_the_retention(r: redis.Redis) -> None:
    for i in range(5):
        publish(r, f't{i}', *({'i': str(i * 10 + j)} for j in range(10)), retention=('MAXLEN', '7', '='))
    assert r.xlen(S) == 7 and r.xrange(S)[-1][1] == {'i': '49'}
    last = r.xrange(S)[-1][0]
    publish(r, 'm', {'i': 'new'}, retention=('MINID', last, '='))
    assert [e[1]['i'] for e in r.xrange(S)] == ['49', 'new']


def test_ack_reports_the_ids_it_acknowledged(r: redis.Redis) -> None:
    ids = publish(r, 't', {'a': '1'}, {'a': '2'})
    r.xgroup_create(S, 'g', '0')
    r.xreadgroup('g', 'c', {S: '>'}, count=10)
    assert run(r, 'ack-1', [S], ['g', ids[0], ids[0], '9-9']) == [ids[0]]
    assert r.xpending(S, 'g')['pending'] == 1
    assert run(r, 'ack-1', [S], ['other', ids[1]]) == []  # a missing group acknowledges nothing


def test_autoclaim_takes_idle_entries_and_dead_letters_after_max_deliveries(r: redis.Redis) -> None:
    ids = publish(r, 't', {'a': '1'}, {'b': '2'})
    r.xgroup_create(S, 'g', '0')
    r.xreadgroup('g', 'c1', {S: '>'}, count=10)
    time.sleep(0.05)
    assert run(r, 'autoclaim-2', [S, DEAD], ['ev', 'g', 'c2', 60_000, 100, 0, 'e']) == [[], []]  # not idle enough
    taken, dead = run(r, 'autoclaim-2', [S, DEAD], ['ev', 'g', 'c2', 20, 1, 0, 'e'])
    assert (taken, dead) == ([[ids[0], ['a', '1'], 2]], [])  # COUNT 1, the oldest first, 2nd delivery
    assert {p['message_id']: p['consumer'] for p in r.xpending_range(S, 'g', '-', '+', 10)} == {
        ids[0]: 'c2',
        ids[1]: 'c1',
    }
    # max deliveries 2: ids[0] has had 2, so it goes to the dead-letter stream; ids[1] (1 delivery) is taken
    taken, dead = run(r, 'autoclaim-2', [S, DEAD], ['ev', 'g', 'c3', 0, 100, 2, 'too many'])
    assert [t[0] for t in taken] == [ids[1]] and taken[0][2] == 2 and dead == [ids[0]]
    [(_, record)] = r.xrange(DEAD)
    assert record == {
        'a': '1',
        'ferroq:source': 'ev',
        'ferroq:id': ids[0],
        'ferroq:group': 'g',
        'ferroq:deliveries': '2',
        'ferroq:error': 'too many',
    }
    assert [p['message_id'] for p in r.xpending_range(S, 'g', '-', '+', 10)] == [ids[1]]
    assert r.xlen(S) == 2  # other groups may still need the entry: it is acknowledged, never deleted


def test_autoclaim_drops_entries_deleted_while_pending(r: redis.Redis) -> None:
    ids = publish(r, 't', {'a': '1'}, {'b': '2'})
    r.xgroup_create(S, 'g', '0')
    r.xreadgroup('g', 'c1', {S: '>'}, count=10)
    r.xdel(S, ids[0])
    taken, dead = run(r, 'autoclaim-2', [S, DEAD], ['ev', 'g', 'c2', 0, 100, 0, 'e'])
    assert [t[0] for t in taken] == [ids[1]] and dead == []
    assert [p['message_id'] for p in r.xpending_range(S, 'g', '-', '+', 10)] == [ids[1]]


def test_dead_letter_moves_only_pending_entries(r: redis.Redis) -> None:
    ids = publish(r, 't', {'a': '1'}, {'b': '2'}, {'c': '3'})
    r.xgroup_create(S, 'g', '0')
    r.xreadgroup('g', 'c', {S: '>'}, count=2)  # ids[2] is never delivered
    assert run(r, 'dead_letter-2', [S, DEAD], ['ev', 'g', 'bad', ids[1], ids[2], '1-1']) == [ids[1]]
    [(_, record)] = r.xrange(DEAD)
    assert record['b'] == '2' and record['ferroq:error'] == 'bad' and record['ferroq:deliveries'] == '1'
    assert [p['message_id'] for p in r.xpending_range(S, 'g', '-', '+', 10)] == [ids[0]]


@pytest.mark.parametrize('script', ['dead_letter-2', 'autoclaim-2'])
def test_a_missing_group_is_an_error_and_writes_nothing(r: redis.Redis, script: str) -> None:
    [first] = publish(r, 't', {'a': '1'})
    args = ['ev', 'nope', 'e', first] if script == 'dead_letter-2' else ['ev', 'nope', 'c', 0, 10, 1, 'e']
    with pytest.raises(redis.ResponseError, match='NOGROUP'):
        run(r, script, [S, DEAD], args)
    assert not r.exists(DEAD)
