"""The same Streams operations through every client leave the same Redis state as the pure client (the reference).

Each implementation runs the scenario on its own DB; every key is then compared by type and content: entries,
consumer groups and their pending lists, the publish tokens' records. Entry ids are replaced by their index in
the scenario (Redis makes them from its clock), dead-letter entries' own ids by ``<new>``, tokens by ``<token>``
and idle times left out.
"""

from __future__ import annotations

import re
import time
from dataclasses import astuple
from typing import Any

import pytest
import redis

from _differential import COMPARED, REFERENCE, Differential, containers
from ferroq.types import GroupInfo, PendingEntry, StreamEntry, StreamInfo

ID_RE = re.compile(r'\b\d+-\d+\b')
TOKEN_RE = re.compile(r':published:[0-9a-f]{32}$')


def scenario(c: Any, raw: redis.Redis) -> tuple[list[str], list[Any]]:
    ids: list[str] = []
    log: list[Any] = []
    s = c.stream('ev')
    ids += s.publish_batch([{'n': str(i)} for i in range(7)])  # 3 chunks of chunk_size=3: 3 tokens
    ids.append(s.publish({'n': '7', 'é': 'ü'}, maxlen=100, approximate=False))
    a = s.group('a', 'c1', max_deliveries=2)
    log.append(a.create('0'))
    log.append(s.group('b', 'c1').create())
    log.append(a.read(3))
    log.append(a.ack([ids[0], ids[5], ids[0]]))
    log.append(a.autoclaim(0))  # ids 1 and 2, second delivery
    log.append(a.autoclaim(0, error='gave up'))  # now at max_deliveries: dead-lettered
    log.append(s.group('a', 'c2').read(2))
    log.append(a.dead_letter([ids[3], ids[0]], error='bad'))
    log.append(a.pending())
    b = s.group('b', 'c1')
    b.seek(ids[5])
    log.append(b.read(10))
    log.append(s.trim(maxlen=6, approximate=False))
    gone = s.group('gone', 'x')
    log.append(gone.create('$'))
    log.append(gone.delete())
    log.append(s.range('(' + ids[2], '+', 3))
    log.append(s.info())
    log.append(s.groups())
    log.append(s.length())
    other = c.stream('other')
    # Ids are per stream: 'other' starts at <ms>-0 again, so it publishes in a later ms than every id of 'ev',
    # never equal to one of them (the index below maps each id to one scenario index).
    time.sleep(0.002)
    ids.append(other.publish({'x': 'y'}))
    log.append(other.delete())
    return ids, log


def normalize(value: Any, index: dict[str, str]) -> Any:
    if isinstance(value, str):
        return ID_RE.sub(lambda m: index.get(m.group(), m.group()), value)
    if isinstance(value, StreamEntry):
        return ('StreamEntry', normalize(value.id, index), value.stream, value.fields, value.deliveries)
    if isinstance(value, PendingEntry):
        return ('PendingEntry', normalize(value.id, index), value.consumer, value.deliveries)  # idle: timing
    if isinstance(value, (GroupInfo, StreamInfo)):
        return (type(value).__name__, *normalize(list(astuple(value)), index))
    return containers(value, index, normalize)


def dump(raw: redis.Redis, index: dict[str, str]) -> dict[str, Any]:
    state: dict[str, Any] = {}
    for key in raw.scan_iter(count=1000):
        kind = raw.type(key)
        if kind == 'stream':
            # Only 'ev' holds the scenario's ids: the dead-letter stream's own ids may equal some of them
            # (same ms, a sequence of its own), so they are all '<new>'.
            own = index if key == 'ferroq:stream:ev' else {}
            content: Any = {
                'entries': [(own.get(i, '<new>'), normalize(f, index)) for i, f in raw.xrange(key)],
                'groups': normalize(raw.xinfo_groups(key), index),
                'pending': {
                    g['name']: [
                        (normalize(p['message_id'], index), p['consumer'], p['times_delivered'])
                        for p in raw.xpending_range(key, g['name'], '-', '+', 1000)
                    ]
                    for g in raw.xinfo_groups(key)
                },
            }
        elif kind == 'string':
            content = (normalize(raw.get(key), index), 0 < raw.pttl(key) <= 120_000)
        else:
            content = f'<{kind}>'
        # Token keys differ only by their random token: number them by content, so none hides another.
        name = TOKEN_RE.sub(':published:<token>', key)
        state[f'{name} {content}' if name != key else key] = (kind, content)
    return state


DIFFERENTIAL = Differential(scenario, dump, normalize)


@pytest.mark.parametrize('kind', COMPARED)
def test_same_streams_state_as_pure(kind, redis_url, loop_thread):
    (ref_state, ref_log), (state, log) = DIFFERENTIAL.run_both(kind, redis_url, loop_thread, dbs=(3, 4))
    assert state == ref_state
    assert log == ref_log


def test_reference_scenario_is_meaningful(redis_url, loop_thread):
    """What the reference run must leave, so that the comparison above compares something."""
    state, log = DIFFERENTIAL.run(REFERENCE, redis_url, 5, loop_thread)
    tokens = sorted(k for k in state if ':published:<token>' in k)
    assert [state[k] for k in tokens] == [
        ('string', ('<0> <1> <2>', True)),
        ('string', ('<3> <4> <5>', True)),
        ('string', ('<6>', True)),
        ('string', ('<7>', True)),
        ('string', ('<8>', True)),  # stream 'other' was deleted: its token's record stays until it expires
    ]
    ev = state['ferroq:stream:ev'][1]
    assert [i for i, _ in ev['entries']] == ['<2>', '<3>', '<4>', '<5>', '<6>', '<7>']
    assert ev['pending'] == {'a': [('<4>', 'c2', 1)], 'b': [('<6>', 'c1', 1), ('<7>', 'c1', 1)]}
    dead = state['ferroq:stream:ev.dead'][1]['entries']
    assert [(i, f['ferroq:id'], f['ferroq:deliveries'], f['ferroq:error']) for i, f in dead] == [
        ('<new>', '<1>', '2', 'gave up'),
        ('<new>', '<2>', '2', 'gave up'),
        ('<new>', '<3>', '1', 'bad'),
    ]
    assert 'ferroq:stream:other' not in state
    assert log[3] == ['<0>']  # <5> was not delivered yet
    assert [e[4] for e in log[4]] == [2, 2] and log[5] == []
    assert log[7] == ['<3>']
    assert log[10:13] == [2, True, True]
