"""The same operations through two implementations leave the same Redis state (and return the same results).

The pure client is the reference. Each implementation runs the scenario on its own DB of the test server;
then every key is compared by type and content, with message ids replaced by their publish index (ids are
random) and times (lease deadlines, claim times) compared only for presence.
"""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
import redis

from _differential import COMPARED, Differential, containers
from ferroq.types import InspectEntry, Message, TopicStats

ID_RE = re.compile(r'[0-9a-f]{32}')


def scenario(c: Any, raw: redis.Redis) -> tuple[list[str], list[Any]]:
    """Every state-changing operation once or more; returns the ids published (in order) and a log of results."""
    ids: list[str] = []
    log: list[Any] = []
    a, b = c.topic('alpha'), c.topic('beta')
    ids += a.publish_batch([{'n': str(i), 'kind': 'bulk'} for i in range(7)])  # 3 chunks of chunk_size=3
    ids.append(a.publish({'n': 'front'}, front=True))
    ids += a.publish_batch([{'n': f'f{i}'} for i in range(4)], front=True)
    ids += b.publish_batch([{'n': f'b{i}', 'ключ': 'значение'} for i in range(5)])
    # Distinct deadlines, so the harvest's order (oldest deadline first) does not depend on the random ids.
    short = a.claim(lease=0.2) + a.claim(lease=0.25) + a.claim(lease=0.3)
    held = a.claim(count=3, lease=60)
    log += [short, held]
    log.append(a.commit([held[0]]))
    log.append(a.commit([held[1].id]))  # a bare id: unfenced
    log.append(a.release([held[2]]))
    log.append(a.extend([short[0]], lease=60))
    multi = c.claim(['beta', 'alpha'], count=4, lease=60)
    log.append(multi)
    log.append(c.commit(multi[:2]))
    log.append(c.extend(multi[2:], lease=120))
    log.append(raw.lmove('rfq:alpha:backlog', 'rfq:alpha:nextlog', 'RIGHT', 'LEFT'))  # a plain rfq consumer
    time.sleep(0.5)
    log.append(a.harvest(lease=60))  # the two short leases not extended; the plain claim gets a lease
    again = a.claim(count=2, lease=60)
    log.append(again)
    log.append(a.commit(short[1:]))  # stale tokens: refused
    log.append(b.harvest(all=True))
    log.append(a.inspect('nextlog'))
    log.append(a.inspect('backlog', start=1, count=3))
    # Worker support: owners, delayed releases, dead-letter moves, resume.
    owned = b.claim(count=3, lease=60, owner='w1')
    log.append(owned)
    log.append(b.release(owned[:1], delay=3600))  # stays delayed: compared in the state dump
    log.append(b.dead_letter(owned[1:2], error='ValueError: boom'))
    log.append(b.resume('w1', lease=60))
    log.append(c.release(multi[2:], delay=0.001))
    log.append(c.topic('beta.dead').inspect())
    log.append(b.stats())
    log.append(b.purge('backlog'))
    log.append(c.topics())
    log.append(a.peek(ids[0]))
    return ids, log


def normalize(value: Any, index: dict[str, str]) -> Any:
    """A comparable form: ids replaced by their publish index, times by their presence."""

    def ids(text: str) -> str:
        return ID_RE.sub(lambda m: index.get(m.group(), f'<unknown {m.group()}>'), text)

    if isinstance(value, str):
        return ids(value)
    if isinstance(value, Message):
        return ('Message', ids(value.id), value.topic, value.fields, value.deliveries)
    if isinstance(value, InspectEntry):
        return (
            'InspectEntry',
            ids(value.id),
            value.fields,
            value.deliveries,
            value.claimed_at is not None,
            value.lease_deadline is not None,
            value.owner,
            value.error,
        )
    if isinstance(value, TopicStats):
        return ('TopicStats', value.topic, value.backlog, value.nextlog, value.leased, value.expired, value.delayed)
    return containers(value, index, normalize)


def _claim_names(raw: redis.Redis, index: dict[str, str]) -> dict[str, str]:
    """Claim tokens are random: each is named after the first id its claim holds, the same in every run."""
    names: dict[str, str] = {}
    for key in raw.scan_iter(match='rfq:*:claims', count=1000):
        for token, record in raw.hgetall(key).items():
            if ':' not in token:
                names[token] = f'<claim of {normalize(record.split(" ")[2], index)}>'
    return names


def dump(raw: redis.Redis, index: dict[str, str]) -> dict[str, Any]:
    """Every key of the DB: type and content, normalised."""
    claims = _claim_names(raw, index)

    def claim(text: str) -> str:
        name = claims.get(text.removesuffix(':d'))
        return text if name is None else name + text[len(text.removesuffix(':d')) :]

    state: dict[str, Any] = {}
    for key in raw.scan_iter(count=1000):
        kind = raw.type(key)
        if kind == 'list':
            content: Any = raw.lrange(key, 0, -1)
        elif kind == 'hash':
            # deliveries: a claim's record '<count> <claimed_at_ms>[ <owner>]' holds a time; messages hold fields
            content = raw.hgetall(key)
            if key.endswith(':deliveries'):
                content = {k: re.sub(r'^(\d+) \d+', r'\1 <time>', v) for k, v in content.items()}
            if key.endswith(':claims'):  # '<claimed_at_ms> <owner> <ids>' under a random token
                content = {claim(k): re.sub(r'^\d+ ', '<time> ', v) for k, v in content.items()}
        elif kind == 'zset':
            content = [claim(m) for m in raw.zrange(key, 0, -1)]  # lease deadlines: presence only
        elif kind == 'set':
            content = sorted(normalize(m, index) for m in raw.smembers(key))
        elif kind == 'string':
            content = raw.get(key)
        else:
            content = f'<{kind}>'
        content = normalize(content, index)
        state[normalize(key, index)] = (kind, sorted(content) if kind == 'zset' else content)
    return state


DIFFERENTIAL = Differential(scenario, dump, normalize)


@pytest.mark.parametrize('kind', COMPARED)
def test_same_redis_state_as_pure(kind, redis_url, loop_thread):
    (ref_state, ref_log), (state, log) = DIFFERENTIAL.run_both(kind, redis_url, loop_thread, dbs=(1, 2))
    assert ref_state, 'the scenario left nothing to compare'
    assert {'rfq:alpha:backlog', 'rfq:alpha:nextlog', 'rfq:alpha:leases', 'rfq:alpha:deliveries'} <= set(ref_state)
    assert state == ref_state
    assert log == ref_log
