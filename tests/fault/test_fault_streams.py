"""Streams topics under faults: consumers of one group SIGKILLed, connections cut by CLIENT KILL, dead-lettering.

The drivers publish with ``publish_batch`` and consume with ``read`` / ``ack``, autoclaiming every 0.5 s what
other consumers left pending for ``LEASE`` seconds (``_fault_queues.GroupQueue``); the checker is the rfq one.

What they prove: an entry left pending by a dead consumer is taken over and acknowledged by another, so
nothing is lost; an entry is delivered again only when it was in flight at a kill (or a connection cut);
the group ends with nothing pending and nothing undelivered; a publish retried after a cut connection
never appends its entries twice (the call's publish token: also for a single publish through the fault
proxy, which cuts it before, during or after Redis ran it); with ``max_deliveries`` an entry is either
acknowledged or in the dead-letter stream, never both and never neither.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest
from _fault_history import body
from _fault_proxy import KINDS as FAULTS
from _fault_queues import Target

from _adapters import KINDS, new_client
from conftest import wait_for
from ferroq import protocol

LEASE = 1.5
CONSUMER = {'count': 10, 'lease': LEASE, 'harvest_every': 0.5, 'work': 0.02}


def _group(r, name: str, max_deliveries: int | None = None) -> Target:
    target = Target(name, group='g', max_deliveries=max_deliveries)
    target.create(r)
    return target


def _crashing_consumers(procs, impl, url, target, rng, batches, consumer) -> tuple[list[str], int]:
    """Two producers (``batches`` of 25), three consumers under the crash loop (>= 6 kills); returns the
    producers and the number of kills."""
    producers = ['p0', 'p1']
    for name in producers:
        procs.spawn('producer', name, impl, url, target, batches=batches, batch=25, pace=0.05)

    def start(name: str) -> None:  # each consumer, and each replacement, has its own consumer name
        procs.spawn('consumer', name, impl, url, target, **consumer)

    live = ['c0', 'c1', 'c2']
    for name in live:
        start(name)
    return producers, procs.crash_loop(rng, live, start, producers, min_kills=6)


def _assert_done(r, procs, target: Target, producers: list[str]) -> None:
    """The group has nothing pending and nothing undelivered; the stream holds each published key exactly once,
    each key of a publish that raised at most once, and nothing else."""
    group = target.group_info(r)
    assert target.waiting(r) == 0 and group['pending'] == 0 and group.get('lag', 0) == 0, group
    published, attempted = set(), set()
    for e in (e for p in producers for e in procs.events(p) if e['ev'] == 'pub'):
        attempted.update(e['keys'])
        if 'ids' in e:
            published.update(e['keys'])
    in_stream = target.entry_keys(r)
    assert max(in_stream.values()) == 1, in_stream.most_common(3)
    assert published <= in_stream.keys() <= attempted


@pytest.mark.parametrize('impl', KINDS)
def test_stream_kill_consumers(impl, server, r, procs, report):
    target = _group(r, 'skc')
    producers, kills = _crashing_consumers(
        procs, impl, server.url, target, random.Random(f'skill-{impl}'), 40, CONSUMER
    )
    counts = procs.settle(r, server.url, target, producers, LEASE)
    report(f'stream-kill-consumers[{impl}]', counts, f'kills={kills}')
    # Redelivered only what a killed consumer held: read (or autoclaimed) and not acknowledged by it.
    counts.assert_targets({'kill', 'unrecorded'})
    assert kills >= 6
    assert counts.published == 2 * 40 * 25 and counts.indeterminate == 0
    assert not counts.errors, counts.samples['errors']  # no connection faults here: no call may fail
    _assert_done(r, procs, target, producers)


@pytest.mark.parametrize('impl', KINDS)
def test_stream_client_kill(impl, server, r, procs, report):
    target = _group(r, 'sck')
    producers, _ = procs.load(impl, server.url, target, {'batches': 40, 'batch': 25, 'pace': 0.03}, CONSUMER)
    wait_for('the drivers to connect', lambda: len(r.client_list(_type='normal')) > 4, timeout=20)
    rounds, killed = procs.client_kills(r, random.Random(f'stream-client-kill-{impl}'))
    counts = procs.settle(r, server.url, target, producers, LEASE)
    report(f'stream-client-kill[{impl}]', counts, f'rounds={rounds} in_stream={sum(target.entry_keys(r).values())}')
    # Read replies lost with the connection (unrecorded), acks that raised and were not applied (expired).
    counts.assert_targets({'unrecorded', 'expired'})
    assert killed >= rounds  # every round cut live connections
    # A publish retried after a cut connection returns the first attempt's ids: never a second copy.
    _assert_done(r, procs, target, producers)


@pytest.mark.parametrize('impl', KINDS)
def test_stream_dead_letter_under_kills(impl, server, r, procs, report):
    """max_deliveries=1: what a killed consumer held goes to the dead-letter stream at the next autoclaim."""
    target = _group(r, 'sdl', max_deliveries=1)
    # Longer work: the consumers hold entries most of the time, so the kills catch some.
    consumer = {**CONSUMER, 'work': 0.1}
    producers, kills = _crashing_consumers(procs, impl, server.url, target, random.Random(f'sdl-{impl}'), 30, consumer)
    counts = procs.settle(r, server.url, target, producers, LEASE)
    report(f'stream-dead-letter[{impl}]', counts, f'kills={kills}')
    # Nothing is delivered twice (a second delivery would be the second of max_deliveries=1), nothing both
    # acknowledged and dead-lettered (double_commits), nothing neither (lost).
    counts.assert_targets(set())
    assert counts.duplicated == 0 and not counts.errors, counts.samples
    assert counts.published == 2 * 30 * 25
    assert counts.dead_lettered, 'no kill caught a consumer holding entries: the scenario did not test it'
    _assert_done(r, procs, target, producers)


@pytest.mark.parametrize('fault', FAULTS)
@pytest.mark.parametrize('impl', KINDS)
def test_stream_publish_through_a_broken_connection(impl, fault, server, r, proxy, loop_thread, procs, report):
    """One publish_batch whose connection breaks once: the retry carries the same token, so each entry is
    appended exactly once and the ids returned are the entries' ids."""
    target = _group(r, 'smid')
    client = new_client(impl, loop_thread, proxy.url, command_timeout=5.0)
    try:
        stream = client.stream(target.name)
        # Connects (and loads the script) before the fault is armed.
        procs.record('pub', keys=['warm-up'], ids=stream.publish_batch([body('warm-up')]))
        keys = [f'b.{i}' for i in range(500)]
        proxy.arm(fault, protocol.script_hashes()['streams/publish-2'].encode())
        ids = stream.publish_batch([body(k) for k in keys])
        procs.record('pub', keys=keys, ids=ids)
        assert proxy.pending() == 0, 'the fault was never triggered'
    finally:
        client.close()
    assert target.entry_keys(r) == Counter(['warm-up', *keys])
    assert [entry_id for entry_id, _ in r.xrange(target.stream_key)][1:] == ids
    counts = procs.drained(r, server.url, target, 60.0)
    report(f'stream-mid-publish-{fault}[{impl}]', counts)
    counts.assert_targets(set())
    assert counts.duplicated == 0 and counts.published == len(keys) + 1
