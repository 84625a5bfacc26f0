"""Smoke tests of ``python -m ferroq`` (native and ``--pure``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest


def run(url: str | None, *args: str, stdin: str | None = None, cwd=None) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, '-m', 'ferroq', *(['--url', url] if url else []), *args]
    return subprocess.run(
        argv, input=stdin, capture_output=True, text=True, timeout=30, cwd=cwd, env=dict(os.environ), check=False
    )


@pytest.fixture(params=['native', 'pure'])
def flags(request: pytest.FixtureRequest) -> list[str]:
    return ['--pure'] if request.param == 'pure' else []


def test_publish_claim_commit_stats(redis_url, r, flags, tmp_path):
    out = run(redis_url, *flags, '--json', 'publish', '-t', 'jobs', '-m', '{"tile": "T32UNE", "n": 1}', cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    [msg_id] = json.loads(out.stdout)
    assert r.hgetall(f'rfq:jobs:message:{msg_id}') == {'tile': 'T32UNE', 'n': '1'}

    out = run(redis_url, *flags, 'publish', '-t', 'jobs', '--stdin', stdin='{"n": "2"}\n{"n": "3"}\n', cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert len(out.stdout.split()) == 2

    out = run(redis_url, *flags, '--json', 'stats', '-t', 'jobs', cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    [stats] = json.loads(out.stdout)
    assert (stats['topic'], stats['backlog'], stats['nextlog']) == ('jobs', 3, 0)

    out = run(redis_url, *flags, 'claim', '-t', 'jobs', '-n', '2', '--lease', '60', cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    claimed = [json.loads(line) for line in out.stdout.splitlines()]
    assert [c['fields'] for c in claimed] == [{'tile': 'T32UNE', 'n': '1'}, {'n': '2'}]
    assert claimed[0]['id'] == msg_id and claimed[0]['deliveries'] == 1

    out = run(redis_url, *flags, '--json', 'commit', '-t', 'jobs', *[c['id'] for c in claimed], cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [c['id'] for c in claimed]

    out = run(redis_url, *flags, '--json', 'topics', cwd=tmp_path)
    assert json.loads(out.stdout) == ['jobs']
    out = run(redis_url, *flags, '--json', 'purge', '-t', 'jobs', '--yes', cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert r.dbsize() == 0


def test_bad_topic_exits_2(redis_url, r, flags, tmp_path):
    out = run(redis_url, *flags, 'publish', '-t', 'bad:topic', '-m', '{"a": "b"}', cwd=tmp_path)
    assert out.returncode == 2
    assert 'invalid topic name' in out.stderr
    assert r.dbsize() == 0


def test_bad_message_exits_2(redis_url, flags, tmp_path):
    out = run(redis_url, *flags, 'publish', '-t', 'jobs', '-m', '{"a": {"b": "c"}}', cwd=tmp_path)
    assert out.returncode == 2


def test_unreachable_server_exits_1(flags, tmp_path):
    out = run('redis://127.0.0.1:1/0', *flags, 'topics', cwd=tmp_path)
    assert out.returncode == 1
    assert 'error' in out.stderr


def test_password_is_not_printed(auth_server, flags, tmp_path):
    out = run(f'redis://default:Wr0ng-Pa55@127.0.0.1:{auth_server.port}/0', *flags, 'topics', cwd=tmp_path)
    assert out.returncode == 1
    assert 'Wr0ng-Pa55' not in out.stderr + out.stdout


def test_help(tmp_path):
    out = run(None, '--help', cwd=tmp_path)
    assert out.returncode == 0
    for verb in ('publish', 'claim', 'commit', 'harvest', 'stats', 'rsmq', 'bench'):
        assert verb in out.stdout


def test_rsmq_verbs(redis_url, r, flags, tmp_path):
    def ok(*args: str, stdin: str | None = None) -> str:
        out = run(redis_url, *flags, *args, stdin=stdin, cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        return out.stdout

    ok('rsmq', 'create', '-q', 'dead')
    ok('rsmq', 'create', '-q', 'jobs', '--vt', '60', '--maxsize', '-1', '--max-receives', '3', '--dead-letter', 'dead')
    assert r.hmget('rsmq:jobs:Q', 'vt', 'maxsize', 'ferroq:maxrecv', 'ferroq:dlq') == ['60', '-1', '3', 'dead']
    assert json.loads(ok('--json', 'rsmq', 'queues')) == ['dead', 'jobs']
    [first] = json.loads(ok('rsmq', 'send', '-q', 'jobs', '-m', 'hello world', '--json'))
    assert r.hget('rsmq:jobs:Q', first) == 'hello world'
    more = ok('rsmq', 'send', '-q', 'jobs', '--stdin', stdin='two\nthree\n').split()
    assert len(more) == 2
    [got] = [json.loads(line) for line in ok('rsmq', 'receive', '-q', 'jobs', '--vt', '0').splitlines()]
    assert (got['id'], got['message'], got['rc']) == (first, 'hello world', 1)
    [attrs] = json.loads(ok('--json', 'rsmq', 'attributes', '-q', 'jobs'))
    assert (attrs['totalsent'], attrs['totalrecv'], attrs['msgs'], attrs['dead_letter']) == (3, 1, 3, 'dead')
    table = ok('rsmq', 'attributes')
    assert table.splitlines()[0].split()[:3] == ['QUEUE', 'MSGS', 'HIDDEN'] and 'dead after 3' in table
    ok('rsmq', 'visibility', '-q', 'jobs', '--vt', '60', first)
    popped = [json.loads(line)['message'] for line in ok('rsmq', 'pop', '-q', 'jobs', '-n', '5').splitlines()]
    assert popped == ['two', 'three']
    assert ok('rsmq', 'delete', '-q', 'jobs', first).split() == [first]
    out = run(redis_url, *flags, 'rsmq', 'visibility', '-q', 'jobs', '--vt', '1', first, cwd=tmp_path)
    assert out.returncode == 1 and 'not found' in out.stderr
    [attrs] = json.loads(ok('rsmq', 'set-attributes', '-q', 'jobs', '--vt', '5', '--json'))
    assert attrs['vt'] == 5
    out = run(redis_url, *flags, 'rsmq', 'delete-queue', '-q', 'jobs', cwd=tmp_path)
    assert out.returncode == 2 and '--yes' in out.stderr
    ok('rsmq', 'delete-queue', '-q', 'jobs', '--yes')
    assert ok('rsmq', 'queues', '--ns', 'rsmq').split() == ['dead']


def test_rsmq_bad_input_exits_2(redis_url, r, flags, tmp_path):
    for args in (
        ('rsmq', 'create', '-q', 'bad.name'),
        ('rsmq', 'create', '-q', 'jobs', '--maxsize', '100'),
        ('rsmq', 'delete', '-q', 'jobs', 'short-id'),
    ):
        out = run(redis_url, *flags, *args, cwd=tmp_path)
        assert out.returncode == 2, (args, out.stderr)
    out = run(redis_url, *flags, 'rsmq', 'receive', '-q', 'missing', cwd=tmp_path)
    assert out.returncode == 1 and 'not found' in out.stderr
    assert r.dbsize() == 0
