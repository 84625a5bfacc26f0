"""The same RSMQ operations through every client leave the same Redis state as the pure client (the reference).

Each implementation runs the scenario on its own DB; every key is then compared by type and content, with
message ids replaced by their send index (ids are random) and times (created, modified, fr, ZSET scores)
replaced by their presence, or by their offset from the send time where RSMQ defines one.
"""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
import redis

from _differential import COMPARED, REFERENCE, Differential, containers
from ferroq._limits import MIN_RSMQ_COUNT_FOR_CALLER_BODIES
from ferroq.types import RsmqAttributes, RsmqMessage

ID_RE = re.compile(r'[0-9a-z]{10}[A-Za-z0-9]{22}')
TIME_FIELDS = ('created', 'modified')


def scenario(c: Any, raw: redis.Redis) -> tuple[list[str], list[Any]]:
    ids: list[str] = []
    log: list[Any] = []
    dead = c.rsmq('dead', ns='d1')
    dead.create(vt=5, maxsize=-1)
    q = c.rsmq('jobs', ns='d1', realtime=True)
    q.create(vt=60, delay=0, maxsize=2048, max_receives=2, dead_letter='dead')
    other = c.rsmq('other', ns='d1')
    other.create()
    poison = c.rsmq('poison', ns='d1')
    poison.create(max_receives=1, dead_letter='dead')
    ids += q.send_batch([f'm{i}' for i in range(8)])  # 3 chunks of chunk_size=3
    ids.append(q.send('délai', delay=3600))
    ids.append(q.send('😀' * 10))
    ids.append(poison.send('poison'))
    # receive(vt=0) below makes m3 visible again at "now" (ms); pop() must then find m4 (sent earlier) first,
    # so "now" must be past every send's ms: in one ms the tie goes to the random part of the ids.
    time.sleep(0.005)
    log.append(q.receive_batch(3))
    log.append(q.receive(vt=0))
    log.append(q.pop())
    log.append(q.pop_batch(2))
    log.append(q.delete(ids[7]))  # never received
    log.append(q.delete_batch([ids[6], ids[2], ids[9]]))
    log.append(q.change_visibility(ids[8], 7200))
    log.append(poison.receive(vt=0))
    log.append(poison.receive(vt=0))  # received once already: moved to dead
    log.append(dead.receive(vt=100))
    ids += dead.send_batch(['x1', 'x2'])
    log.append(dead.receive_batch(MIN_RSMQ_COUNT_FOR_CALLER_BODIES, vt=100))  # reads the bodies itself
    log.append(q.set_attributes(vt=10, maxsize=-1))
    log.append(q.set_attributes(max_receives=0))
    log.append(other.attributes())
    other.delete_queue()
    log.append(c.rsmq_queues(ns='d1'))
    return ids, log


def normalize(value: Any, index: dict[str, str]) -> Any:
    def ids(text: str) -> str:
        return ID_RE.sub(lambda m: index.get(m.group(), f'<unknown {m.group()}>'), text)

    if isinstance(value, str):
        return ids(value)
    if isinstance(value, RsmqMessage):
        return ('RsmqMessage', ids(value.id), value.message, value.rc)
    if isinstance(value, RsmqAttributes):
        # hiddenmsgs is left out: RSMQ counts from the start of the current second, which may have just turned.
        return ('RsmqAttributes', value.vt, value.delay, value.maxsize, value.totalrecv, value.totalsent, value.msgs,
                value.max_receives, value.dead_letter)  # fmt: skip
    return containers(value, index, normalize)


TOKEN_RE = re.compile(r':published:[0-9a-f]{32}$')


def dump(raw: redis.Redis, index: dict[str, str]) -> dict[str, Any]:
    state: dict[str, Any] = {}
    for key in raw.scan_iter(count=1000):
        kind = raw.type(key)
        if kind == 'hash':
            content: Any = {
                k: ('<time>' if k in TIME_FIELDS or k.endswith(':fr') else v) for k, v in raw.hgetall(key).items()
            }
        elif kind == 'zset':
            # A score minus its id's send time (ms): the delay or vt given, ~0 for "now".
            members = raw.zrange(key, 0, -1, withscores=True)
            content = sorted((normalize(m, index), round((s - int(m[:10], 36) / 1000) / 1000)) for m, s in members)
        elif kind == 'set':
            content = sorted(raw.smembers(key))
        elif kind == 'string':  # a send record: the ids of its chunk, kept for a while
            content = ([normalize(i, index) for i in raw.get(key).split()], 0 < raw.pttl(key) <= 120_000)
        else:
            content = f'<{kind}>'
        # Record keys differ only by their random token: number them by content, so none hides another.
        name = TOKEN_RE.sub(':published:<token>', key)
        if name != key:
            state[f'{name} {content}'] = (kind, content)
            continue
        state[normalize(key, index)] = (kind, normalize(content, index))
    return state


DIFFERENTIAL = Differential(scenario, dump, normalize)


@pytest.mark.parametrize('kind', COMPARED)
def test_same_rsmq_state_as_pure(kind, redis_url, loop_thread):
    (ref_state, ref_log), (state, log) = DIFFERENTIAL.run_both(kind, redis_url, loop_thread, dbs=(3, 4))
    assert {'d1:QUEUES', 'd1:jobs', 'd1:jobs:Q', 'd1:dead', 'd1:dead:Q'} <= set(ref_state)
    assert 'd1:other:Q' not in ref_state
    assert state == ref_state
    assert log == ref_log


def test_reference_scenario_is_meaningful(redis_url, loop_thread):
    """What the reference run must leave, so that the comparison above compares something."""
    state, log = DIFFERENTIAL.run(REFERENCE, redis_url, 5, loop_thread)
    assert state['d1:QUEUES'] == ('set', ['dead', 'jobs', 'poison'])
    assert state['d1:dead'] == ('zset', [['<10>', 100], ['<11>', 100], ['<12>', 100]])
    assert 'd1:poison' not in state  # its one message moved to dead
    assert state['d1:poison:Q'][1]['ferroq:dlq'] == 'dead'
    assert state['d1:jobs'] == ('zset', [['<0>', 60], ['<1>', 60], ['<3>', 0], ['<8>', 7200]])
    jobs = state['d1:jobs:Q'][1]
    assert (jobs['totalsent'], jobs['totalrecv'], jobs['vt'], jobs['maxsize']) == ('10', '7', '10', '-1')
    assert '<3>:rc' in jobs and '<7>' not in jobs and 'ferroq:maxrecv' not in jobs
    assert [m[2] for m in log[0]] == ['m0', 'm1', 'm2']
    assert log[4:6] == [True, ['<2>', '<9>']]
    assert log[7:10] == [('RsmqMessage', '<10>', 'poison', 1), None, ('RsmqMessage', '<10>', 'poison', 1)]
    assert log[10] == [('RsmqMessage', '<11>', 'x1', 1), ('RsmqMessage', '<12>', 'x2', 1)]
