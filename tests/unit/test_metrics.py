"""``ferroq metrics``: a real scrape of the Prometheus endpoint (loopback only) against a seeded Redis."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

import ferroq.pure
from _redis import free_port
from ferroq._metrics import METRICS

#: Longest wait for the server to start or stop.
WAIT = 60.0


@pytest.fixture
def metrics(redis_url: str) -> Iterator[str]:
    """``ferroq metrics`` on a free loopback port; yields the /metrics URL."""
    for _ in range(3):  # another process may take the port between free_port() and the bind
        port = free_port()
        proc = subprocess.Popen(
            [sys.executable, '-m', 'ferroq', '--url', redis_url, 'metrics', '--port', str(port)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ),
        )
        assert proc.stdout is not None
        line = proc.stdout.readline()  # the "serving" line, or '' when it exited (the pipe closes)
        if line.startswith('serving metrics'):
            break
        proc.wait(WAIT)
    else:
        pytest.fail(f'ferroq metrics did not start: {proc.stderr.read() if proc.stderr else ""}')
    assert f'http://127.0.0.1:{port}/metrics' in line
    try:
        yield f'http://127.0.0.1:{port}/metrics'
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(WAIT) == 130  # interrupted: the command's documented status


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(url, timeout=WAIT) as reply:
        assert reply.status == 200
        assert reply.headers['Content-Type'].startswith('text/plain')
        text = reply.read().decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
    return out


def q(kind: str, name: str) -> tuple[tuple[str, str], ...]:
    return (('kind', kind), ('queue', name))


def g(stream: str, group: str) -> tuple[tuple[str, str], ...]:
    return (('group', group), ('stream', stream))


def test_scrape(redis_url, metrics):
    with ferroq.pure.Client(redis_url) as client:
        jobs = client.topic('jobs')
        jobs.publish_batch([{'n': str(i)} for i in range(5)])
        jobs.claim(2, lease=0.001)  # both leases expire at once
        client.topic('jobs.dead').publish({'n': 'dead'})
        client.rsmq('emails').create()
        client.rsmq('emails').send_batch(['a', 'b', 'c'])
        events = client.stream('events')
        events.publish({'k': '1'})
        billing = events.group('billing')
        billing.create(start='0')
        events.publish({'k': '2'})
        billing.read(1)

        first = scrape(metrics)
        expected = {
            ('ferroq_up', ()): 1,
            ('ferroq_queue_depth', q('topic', 'jobs')): 3,
            ('ferroq_queue_in_flight', q('topic', 'jobs')): 2,
            ('ferroq_queue_dead_letters', q('topic', 'jobs')): 1,
            ('ferroq_queue_delayed', q('topic', 'jobs')): 0,
            ('ferroq_queue_published_total', q('rsmq', 'rsmq:emails')): 3,
            ('ferroq_queue_depth', q('stream', 'events')): 2,
            ('ferroq_queue_in_flight', q('stream', 'events')): 1,
            ('ferroq_queue_lag', q('stream', 'events')): 1,
            ('ferroq_queue_published_total', q('stream', 'events')): 2,
            ('ferroq_group_pending', g('events', 'billing')): 1,
            ('ferroq_group_lag', g('events', 'billing')): 1,
            ('ferroq_group_consumers', g('events', 'billing')): 1,
            ('ferroq_group_entries_read_total', g('events', 'billing')): 1,
        }
        assert {key: first.get(key) for key in expected} == expected
        assert ('ferroq_queue_expired_leases', q('rsmq', 'rsmq:emails')) not in first  # not an RSMQ figure
        for _ in range(600):  # the leases of 1 ms run out by Redis's clock: wait for a scrape that sees it
            if scrape(metrics)['ferroq_queue_expired_leases', q('topic', 'jobs')] == 2:
                break
            time.sleep(0.1)
        else:
            pytest.fail('the expired leases never showed')

        jobs.publish_batch([{'n': 'more'}] * 3)
        started = time.monotonic()
        second = scrape(metrics)
        assert second['ferroq_queue_depth', q('topic', 'jobs')] == 6
        # a rate: 3 messages over the time between the two scrapes (at most the time since the first one)
        assert second['ferroq_queue_publish_rate', q('topic', 'jobs')] >= 3 / (time.monotonic() - started + 60)
        assert second['ferroq_queue_publish_rate', q('topic', 'jobs')] > 0


def test_every_documented_metric_is_served_and_in_the_readme(redis_url, metrics):
    with ferroq.pure.Client(redis_url) as client:
        client.topic('jobs').publish({'n': '1'})
        client.topic('jobs.dead').publish({'n': '1'})
        client.rsmq('emails').create()
        client.stream('events').group('billing').create(start='0')
        client.stream('events').publish({'k': '1'})
        client.stream('events').group('billing').read(1)
        scrape(metrics)
        served = {name for name, _ in scrape(metrics)}  # the second scrape has the rates
    names = {f'{name}_total' if kind == 'counter' else name for name, (kind, _, _) in METRICS.items()}
    assert names <= served
    readme = (Path(__file__).parents[2] / 'README.md').read_text()
    assert all(f'`{name}`' in readme for name in names), names - {n for n in names if f'`{n}`' in readme}


def test_a_failed_read_answers_up_0(redis_server, tmp_path):
    """Redis going away between scrapes: the scrape still answers, with ferroq_up 0 and no queue metrics."""
    from _redis import RedisServer

    own = RedisServer(tmp_path / 'redis')
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, '-m', 'ferroq', '--url', own.url, 'metrics', '--port', str(port)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().startswith('serving metrics')
        with ferroq.pure.Client(own.url) as client:
            client.topic('jobs').publish({'n': '1'})
        assert scrape(f'http://127.0.0.1:{port}/metrics')['ferroq_up', ()] == 1
        own.stop()
        down = scrape(f'http://127.0.0.1:{port}/metrics')
        assert down['ferroq_up', ()] == 0
        assert not [name for name, _ in down if name.startswith('ferroq_queue')]
    finally:
        own.stop()
        proc.send_signal(signal.SIGINT)
        proc.wait(WAIT)


def test_bad_or_taken_port(redis_url):
    run = [sys.executable, '-m', 'ferroq', '--url', redis_url, 'metrics', '--port']
    out = subprocess.run([*run, '70000'], capture_output=True, text=True, timeout=WAIT, check=False)
    assert (out.returncode, out.stderr) == (2, 'ferroq: error: --port must be from 0 to 65535, got 70000\n')
    with socket.socket() as taken:
        taken.bind(('127.0.0.1', 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = subprocess.run([*run, str(port)], capture_output=True, text=True, timeout=WAIT, check=False)
    assert out.returncode == 1
    assert out.stderr.startswith(f'ferroq: error: cannot listen on 127.0.0.1:{port}: ')
    assert len(out.stderr.splitlines()) == 1
