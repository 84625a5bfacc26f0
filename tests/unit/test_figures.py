"""The figures of ``ferroq top`` and ``ferroq metrics`` (``ferroq._figures``), read from what every client kind
wrote, and the one-shot table ``ferroq top`` prints when not on a terminal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from ferroq import _figures, _top
from ferroq._figures import Sampler

#: What the seed leaves, by (kind, name): depth, in flight, expired, delayed, dead letters.
EXPECTED = {
    ('topic', 'jobs'): (3, 2, 0, 1, 2),
    ('topic', 'jobs.dead'): (2, 0, 0, 0, None),
    ('rsmq', 'rsmq:emails'): (1, 1, None, None, 1),
    ('rsmq', 'rsmq:emails-dead'): (1, 0, None, None, None),
    ('stream', 'events'): (3, 1, None, None, None),
}


def seed(client) -> None:
    """3 waiting + 2 claimed + 1 delayed in jobs, 2 in jobs.dead; RSMQ emails: 1 visible, 1 received, its
    dead-letter queue 1; stream
    events: 3 entries, group billing read 2 and acknowledged 1 (1 pending, lag 1)."""
    jobs = client.topic('jobs')
    jobs.publish_batch([{'n': str(i)} for i in range(6)])
    claimed = jobs.claim(3, lease=300)
    jobs.release([claimed[2]], delay=300)
    client.topic('jobs.dead').publish_batch([{'n': 'x'}, {'n': 'y'}])
    client.rsmq('emails-dead').create()
    client.rsmq('emails-dead').send('dead one')
    emails = client.rsmq('emails')
    emails.create(vt=300, max_receives=5, dead_letter='emails-dead')
    emails.send('first')
    assert emails.receive(vt=300) is not None
    emails.send('second')
    events = client.stream('events')
    events.publish({'k': '1'})
    billing = events.group('billing')
    billing.create(start='0')
    events.publish_batch([{'k': '2'}, {'k': '3'}])
    read = billing.read(2)
    assert billing.ack(read[:1]) == [read[0].id]


def settled(sampler: Sampler) -> _figures.Snapshot:
    """A read once RSMQ no longer counts the message sent last as hidden: its hiddenmsgs counts every message
    due from the start of the current second of the server's clock on."""
    for _ in range(100):
        snapshot = sampler.read()
        depths = {q.key: q.depth for q in snapshot.queues}
        if depths.get(('rsmq', 'rsmq:emails')) == depths.get(('rsmq', 'rsmq:emails-dead')) == 1:
            return snapshot
        time.sleep(0.1)
    pytest.fail('the RSMQ message never became visible')


def test_figures_of_what_each_client_wrote(client, redis_url):
    seed(client)
    with Sampler(redis_url) as sampler:
        first = settled(sampler)
        got = {q.key: (q.depth, q.in_flight, q.expired, q.delayed, q.dead_letters) for q in first.queues}
        assert got == EXPECTED
        by_key = {q.key: q for q in first.queues}
        [billing] = by_key['stream', 'events'].groups
        assert (billing.name, billing.consumers, billing.pending, billing.lag, billing.entries_read) == (
            'billing',
            1,
            1,
            1,
            2,
        )
        assert by_key['stream', 'events'].lag == 1
        assert by_key['stream', 'events'].published_total == 3
        assert by_key['rsmq', 'rsmq:emails'].published_total == 2
        for q in first.queues:
            assert q.oldest_age is not None and 0 <= q.oldest_age < 60

        # Between two reads: 4 published and 2 committed on jobs, 2 sent and 1 deleted on emails, 2 entries
        # published and 2 acknowledged on events.
        jobs = client.topic('jobs')
        jobs.publish_batch([{'n': 'more'}] * 4)
        held = jobs.claim(2, lease=300)
        assert len(jobs.commit(held)) == 2
        emails = client.rsmq('emails')
        emails.send('third')
        emails.send('fourth')
        assert emails.pop() is not None
        events = client.stream('events')
        events.publish_batch([{'k': '4'}, {'k': '5'}])
        group = events.group('billing')
        held_ids = [p.id for p in group.pending()] + [e.id for e in group.read(1)]
        assert len(group.ack(held_ids)) == 2
        second = sampler.read()
        seconds = second.taken - first.taken
        by_key = {q.key: q for q in second.queues}

        def count(rate: float | None) -> int:
            assert rate is not None
            return round(rate * seconds)

        assert (count(by_key['topic', 'jobs'].publish_rate), count(by_key['topic', 'jobs'].commit_rate)) == (4, 2)
        assert by_key['topic', 'jobs'].rates_exact  # the newest id of the first read still waits
        emails_figures = by_key['rsmq', 'rsmq:emails']
        assert (count(emails_figures.publish_rate), count(emails_figures.commit_rate)) == (2, 1)
        assert count(by_key['stream', 'events'].publish_rate) == 2
        [billing] = by_key['stream', 'events'].groups
        assert count(billing.commit_rate) == 2
        assert (billing.pending, billing.lag) == (0, 2)


def test_rfq_rates_are_lower_bounds_once_the_backlog_drained(client, redis_url):
    jobs = client.topic('jobs')
    jobs.publish_batch([{'n': '1'}] * 2)
    with Sampler(redis_url) as sampler:
        first = sampler.read()
        jobs.publish_batch([{'n': '2'}] * 3)
        assert len(jobs.commit(jobs.claim(4, lease=60))) == 4  # the newest id of the first read among them
        second = sampler.read()
        [figures] = second.queues
        assert figures.rates_exact is False
        # 3 published and 4 committed; what can be seen: 1 waiting that is newer, and 2 fewer held
        seconds = second.taken - first.taken
        assert figures.publish_rate is not None and figures.commit_rate is not None
        assert (round(figures.publish_rate * seconds), round(figures.commit_rate * seconds)) == (1, 2)
        assert [cell[:2] for cell in _top.rows(second)[0][7:9]] == ['>=', '>=']  # PUB/S and COMMIT/S


def test_the_first_read_has_no_rates(client, redis_url):
    client.topic('jobs').publish({'a': 'b'})
    with Sampler(redis_url) as sampler:
        [jobs] = sampler.read().queues
        assert (jobs.publish_rate, jobs.commit_rate) == (None, None)


def test_a_queue_deleted_between_reads_goes(client, redis_url):
    client.rsmq('gone').create()
    client.topic('kept').publish({'a': 'b'})
    with Sampler(redis_url) as sampler:
        assert {q.name for q in sampler.read().queues} == {'rsmq:gone', 'kept'}  # still listed in rsmq:QUEUES
        client.rsmq('gone').delete_queue()
        assert {q.name for q in sampler.read().queues} == {'kept'}


def test_later_reads_scan_a_bounded_number_of_rounds(redis_url, r, monkeypatch):
    """After the first full pass, a read advances each SCAN by at most scan_rounds calls; the new topic shows up
    once a pass reaches it."""
    monkeypatch.setattr(_figures, 'SCAN_COUNT', 10)
    r.mset({f'filler:{i}': 'x' for i in range(500)})
    with Sampler(redis_url, scan_rounds=2) as sampler:
        assert sampler.read().queues == []
        r.lpush('rfq:late:backlog', 'id-1')
        before = r.info('commandstats').get('cmdstat_scan', {}).get('calls', 0)
        sampler.read()
        calls = r.info('commandstats')['cmdstat_scan']['calls'] - before
        assert calls <= 2 * 4  # two rounds of the four patterns
        for _ in range(100):  # a pass of ~500 keys at 10 per call is ~50 calls: 25 reads
            if any(q.name == 'late' for q in sampler.read().queues):
                break
        else:
            pytest.fail('the new topic never showed up')


def _ferroq(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, '-m', 'ferroq', '--url', url, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ),
        check=False,
        stdin=subprocess.DEVNULL,
    )


def test_top_prints_one_table_when_not_on_a_terminal(redis_url, make_client):
    seed(make_client(redis_url))
    with Sampler(redis_url) as sampler:
        settled(sampler)
    out = _ferroq(redis_url, 'top', '--interval', '0.2')
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == ['KIND', 'NAME', 'DEPTH', 'IN_FLIGHT', 'EXPIRED', 'DELAYED', 'DEAD', 'PUB/S',
                                'COMMIT/S', 'OLDEST', 'LAG', 'CONSUMERS']  # fmt: skip
    table = {tuple(line.split()[:2]): line.split()[2:] for line in lines[1:]}
    assert table['topic', 'jobs'][:5] == ['3', '2', '0', '1', '2']
    assert table['rsmq', 'rsmq:emails'][:5] == ['1', '1', '-', '-', '1']
    assert table['stream', 'events'][:2] == ['3', '1']
    assert table['group', 'events'] == ['>', 'billing', '-', '1', '-', '-', '-', '-', '0.0', '-', '1', '1']

    out = _ferroq(redis_url, 'top', '--interval', '0.2', '--filter', 'EMAIL')
    assert [line.split()[1] for line in out.stdout.splitlines()[1:]] == ['rsmq:emails', 'rsmq:emails-dead']

    out = _ferroq(redis_url, '--json', 'top', '--interval', '0.2')
    assert out.returncode == 0, out.stderr
    records = {(q['kind'], q['name']): q for q in json.loads(out.stdout)}
    assert records['topic', 'jobs']['depth'] == 3
    assert records['stream', 'events']['groups'][0]['name'] == 'billing'


def test_top_on_an_unreachable_server_exits_1(redis_url):
    from _redis import free_port

    out = _ferroq(f'redis://127.0.0.1:{free_port()}/0', 'top', '--once')
    assert out.returncode == 1
    assert out.stderr.startswith('ferroq: error: ') and len(out.stderr.strip().splitlines()) == 1


def test_top_rejects_a_bad_interval(redis_url):
    out = _ferroq(redis_url, 'top', '--interval', '0')
    assert (out.returncode, out.stderr) == (
        2,
        'ferroq: error: --interval must be more than 0 and at most 3600 seconds, got 0\n',
    )
