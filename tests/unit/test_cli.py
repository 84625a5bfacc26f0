"""Smoke tests of ``python -m ferroq`` (native and ``--pure``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from _checks import signal_when


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
    for verb in ('publish', 'claim', 'commit', 'harvest', 'stats', 'rsmq', 'stream', 'bench', 'worker'):
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


def test_stream_verbs(redis_url, r, flags, tmp_path):
    def ok(*args: str, stdin: str | None = None) -> str:
        out = run(redis_url, *flags, *args, stdin=stdin, cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        return out.stdout

    def entries(text: str) -> list[dict]:
        return [json.loads(line) for line in text.splitlines()]

    s = ('-s', 'events')
    g = (*s, '-g', 'billing', '-c', 'w1')
    ok('stream', 'create-group', *g, '--start', '0')
    [first] = json.loads(ok('--json', 'stream', 'publish', *s, '-m', '{"n": 1}'))
    more = ok('stream', 'publish', *s, '--stdin', '--maxlen', '100', stdin='{"n": "2"}\n{"n": "3"}\n').split()
    assert len(more) == 2 and r.xlen('ferroq:stream:events') == 3
    assert [e['fields'] for e in entries(ok('stream', 'range', *s, '--start', more[0]))] == [{'n': '2'}, {'n': '3'}]
    assert [e['id'] for e in entries(ok('stream', 'range', *s, '--start', f'({first}', '-n', '1'))] == [more[0]]
    assert json.loads(ok('--json', 'stream', 'list')) == ['events']
    info = json.loads(ok('--json', 'stream', 'info', *s))
    assert (info['length'], info['first_id'], info['last_id'], info['groups']) == (3, first, more[1], 1)

    read = entries(ok('stream', 'read', *g, '-n', '2'))
    assert [(e['id'], e['deliveries']) for e in read] == [(first, 1), (more[0], 1)]
    [pending] = json.loads(ok('--json', 'stream', 'pending', *g, '--owner', 'w1', '-n', '1'))
    assert (pending['id'], pending['consumer'], pending['deliveries']) == (first, 'w1', 1)
    assert ok('stream', 'ack', *g, first).split() == [first]
    [group] = json.loads(ok('--json', 'stream', 'groups', *s))
    assert (group['group'], group['pending'], group['last_delivered_id']) == ('billing', 1, more[0])
    assert ok('stream', 'groups', *s).splitlines()[0].split()[:3] == ['GROUP', 'CONSUMERS', 'PENDING']

    # the entry w1 left pending goes to w2, then to the dead-letter stream once delivered twice
    taken = entries(ok('stream', 'autoclaim', *s, '-g', 'billing', '-c', 'w2', '--min-idle', '0'))
    assert [(e['id'], e['deliveries']) for e in taken] == [(more[0], 2)]
    ok('stream', 'autoclaim', *g, '--min-idle', '0', '--max-deliveries', '2', '--error', 'poison')
    [dead] = r.xrange('ferroq:stream:events.dead')
    assert dead[1]['ferroq:id'] == more[0] and dead[1]['ferroq:error'] == 'poison'

    ok('stream', 'seek', *g, '0')  # replay everything
    assert [e['id'] for e in entries(ok('stream', 'read', *g, '-n', '10'))] == [first, *more]
    ok('stream', 'seek', *g, '2000-01-01T00:00:00+00:00')
    assert len(entries(ok('stream', 'read', *g, '-n', '10'))) == 3
    out = ok('stream', 'dead-letter', *g, '--error', 'manual', more[1])
    assert out.split() == [more[1]] and r.xlen('ferroq:stream:events.dead') == 2

    assert json.loads(ok('--json', 'stream', 'trim', *s, '--maxlen', '1', '--exact')) == {
        'stream': 'events',
        'trimmed': 2,
    }
    ok('stream', 'delete-group', *g)
    out = run(redis_url, *flags, 'stream', 'read', *g, cwd=tmp_path)
    assert out.returncode == 1 and 'create' in out.stderr  # the group is gone: QueueNotFound
    out = run(redis_url, *flags, 'stream', 'delete', *s, cwd=tmp_path)
    assert out.returncode == 2 and '--yes' in out.stderr
    ok('stream', 'delete', *s, '--yes')
    assert r.exists('ferroq:stream:events') == 0


def test_stream_bad_input_exits_2(redis_url, r, flags, tmp_path):
    for args in (
        ('stream', 'publish', '-s', 'bad:name', '-m', '{"a": "b"}'),
        ('stream', 'publish', '-s', 'events', '-m', '{}'),
        ('stream', 'range', '-s', 'events', '--start', 'not-an-id'),
        ('stream', 'seek', '-s', 'events', '-g', 'g', '2026-01-01T00:00:00'),  # no offset: ambiguous
        ('stream', 'read', '-s', 'events', '-g', 'g', '-n', '0'),
        ('stream', 'trim', '-s', 'events'),
    ):
        out = run(redis_url, *flags, *args, cwd=tmp_path)
        assert out.returncode == 2, (args, out.stderr)
    assert r.dbsize() == 0


# --- ferroq worker -------------------------------------------------------------------------------

#: A command that appends the JSON it reads on stdin to the file in argv[1], then exits with argv[2].
RECORD = 'import sys; line = sys.stdin.read(); open(sys.argv[1], "a").write(line); sys.exit(int(sys.argv[2]))'
FAST_WORKER = ('--burst', '--poll', '0.05', '--harvest-interval', '0.5')


def test_worker_burst_runs_the_command_per_message(redis_url, r, flags, tmp_path):
    lines = ''.join(json.dumps({'n': str(i), 'ключ': 'é'}) + '\n' for i in range(3))
    published = run(redis_url, *flags, 'publish', '-t', 'jobs', '--stdin', stdin=lines, cwd=tmp_path)
    assert published.returncode == 0, published.stderr
    ids = published.stdout.split()
    log = tmp_path / 'seen.jsonl'
    out = run(redis_url, *flags, '--json', 'worker', '-t', 'jobs', *FAST_WORKER, '--concurrency', '2',
              '--', sys.executable, '-c', RECORD, str(log), '0', cwd=tmp_path)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.splitlines()[-1])['committed'] == 3, out.stdout + out.stderr
    seen = [json.loads(line) for line in log.read_text().splitlines()]
    assert sorted(m['id'] for m in seen) == sorted(ids)
    for m in seen:
        assert set(m) == {'id', 'topic', 'fields', 'deliveries'}
        assert m['topic'] == 'jobs' and m['deliveries'] == 1 and m['fields']['ключ'] == 'é'
    assert r.dbsize() == 0


def test_worker_failing_command_is_retried_then_dead_lettered(redis_url, r, flags, tmp_path):
    [msg_id] = json.loads(
        run(redis_url, *flags, '--json', 'publish', '-t', 'jobs', '-m', '{"n": "1"}', cwd=tmp_path).stdout
    )
    log = tmp_path / 'seen.jsonl'
    script = RECORD.replace('sys.exit(', 'sys.stderr.write("cannot handle\\n"); sys.exit(')
    out = run(redis_url, *flags, 'worker', '-t', 'jobs', *FAST_WORKER, '--max-deliveries', '3', '--retry-delay', '0.05',
              '--', sys.executable, '-c', script, str(log), '4', cwd=tmp_path)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert [json.loads(line)['deliveries'] for line in log.read_text().splitlines()] == [1, 2, 3]
    assert 'cannot handle' in out.stderr  # the command's stderr is passed through
    dead = json.loads(run(redis_url, *flags, '--json', 'inspect', '-t', 'jobs.dead', cwd=tmp_path).stdout)
    assert [d['id'] for d in dead] == [msg_id] and dead[0]['fields'] == {'n': '1'}
    assert dead[0]['error'].startswith('CommandFailed: ')
    # the record in the dead topic: count 0 (not claimed there yet), then the last error
    assert r.hget('rfq:jobs.dead:deliveries', msg_id) == '0\nCommandFailed: ' + (
        f'{sys.executable} exited with status 4: cannot handle'
    )
    assert r.keys('rfq:jobs:*') == []


@pytest.mark.parametrize(
    'args',
    [
        ['worker', '-t', 'jobs', '--burst'],  # no command
        ['worker', '-t', 'jobs', '--burst', '--', 'no-such-command-ferroq'],
        ['worker', '-t', 'bad:topic', '--burst', '--', 'true'],
        ['worker', '-t', 'jobs', '--concurrency', '0', '--', 'true'],
        ['worker', '-t', 'jobs', '--max-deliveries', 'x', '--', 'true'],
        ['worker', '--', 'true'],  # no topic
    ],
)
def test_worker_bad_arguments_exit_2(redis_url, r, flags, tmp_path, args):
    out = run(redis_url, *flags, *args, cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    assert r.dbsize() == 0


def test_worker_sigterm_exits_0_and_releases_prefetched(redis_url, r, flags, tmp_path):
    for i in range(6):
        run(redis_url, *flags, 'publish', '-t', 'jobs', '-m', json.dumps({'n': str(i)}), cwd=tmp_path)
    log = tmp_path / 'seen.jsonl'
    slow = RECORD.replace('sys.exit(', '__import__("time").sleep(1); sys.exit(')
    argv = [sys.executable, '-m', 'ferroq', '--url', redis_url, *flags, 'worker', '-t', 'jobs', '--poll', '0.05',
            '--prefetch', '4', '--', sys.executable, '-c', slow, str(log), '0']  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    _, err = signal_when(proc, signal.SIGTERM, lambda: log.exists() and bool(log.read_text()), timeout=30)
    assert proc.returncode == 0, err
    assert len(log.read_text().splitlines()) == 1  # one command ran to the end and was committed
    assert (r.llen('rfq:jobs:backlog'), r.llen('rfq:jobs:nextlog'), r.exists('rfq:jobs:leases')) == (5, 0, 0)
