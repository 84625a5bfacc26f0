"""``--file`` bulk publishing of the ``ferroq`` command (topics, RSMQ queues, streams), native and ``--pure``."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from _redis import NotRedisServer
from ferroq.protocol import keys


def ferroq(
    url: str, *args: str, stdin: str | None = None, stderr: int | None = subprocess.PIPE
) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, '-m', 'ferroq', '--url', url, *args]
    return subprocess.run(argv, input=stdin, stdout=subprocess.PIPE, stderr=stderr, text=True, timeout=60, check=False)


@pytest.fixture(params=['native', 'pure'])
def flags(request: pytest.FixtureRequest) -> list[str]:
    return ['--pure'] if request.param == 'pure' else []


def _jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text(''.join(f'{line}\n' for line in lines))
    return path


def _messages(n: int) -> list[str]:
    return [json.dumps({'n': i, 'tile': f'T{i}'}) for i in range(n)]


def test_publish_file_in_chunks(redis_url, r, flags, tmp_path):
    path = _jsonl(tmp_path / 'messages.jsonl', _messages(2500))
    out = ferroq(redis_url, *flags, 'publish', '-t', 'jobs', '--file', str(path))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f'published 2,500 messages from {path} to topic jobs in ')
    assert out.stderr == ''  # no progress bar when standard error is not a terminal
    assert r.llen('rfq:jobs:backlog') == 2500
    oldest = r.lindex('rfq:jobs:backlog', -1)  # consumed first: the first line
    assert r.hgetall(f'rfq:jobs:message:{oldest}') == {'n': '0', 'tile': 'T0'}


def test_publish_stdin_skips_blank_lines_and_reports_json(redis_url, r, flags):
    out = ferroq(redis_url, *flags, '--json', 'publish', '-t', 'jobs', '--file', '-', stdin='{"a": "1"}\n\n{"a": 2}\n')
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert (summary['published'], summary['source'], summary['target']) == (2, 'standard input', 'topic jobs')
    assert sorted(r.hget(f'rfq:jobs:message:{i}', 'a') for i in r.lrange('rfq:jobs:backlog', 0, -1)) == ['1', '2']


def test_bad_json_line_stops_before_its_chunk(redis_url, r, flags, tmp_path):
    lines = _messages(2000)
    lines[1499] = '{"n": 1499, oops}'
    path = _jsonl(tmp_path / 'messages.jsonl', lines)
    out = ferroq(redis_url, *flags, 'publish', '-t', 'jobs', '--file', str(path))
    assert out.returncode == 2
    assert out.stderr.startswith('ferroq: error: line 1500: invalid JSON: ')
    assert out.stdout.startswith(f'published 1,000 messages from {path} to topic jobs before the error')
    assert r.llen('rfq:jobs:backlog') == 1000  # the first chunk; nothing of lines 1001-2000


def test_line_refused_by_the_api_names_its_line(redis_url, r, flags, tmp_path):
    lines = _messages(1500)
    lines[1202] = '{"": "no name"}'
    lines[1300] = '{"": "also bad"}'
    path = _jsonl(tmp_path / 'messages.jsonl', lines)
    out = ferroq(redis_url, *flags, 'stream', 'publish', '-s', 'events', '--file', str(path), '--chunk', '500')
    assert out.returncode == 2
    assert out.stderr == (
        'ferroq: error: line 1203: message field names must be non-empty; '
        'line 1301: message field names must be non-empty; nothing of lines 1001-1500 was written\n'
    )
    assert r.xlen(keys.stream_key('events')) == 1000


def test_rsmq_send_file(redis_url, r, flags, tmp_path):
    assert ferroq(redis_url, *flags, 'rsmq', 'create', '-q', 'jobs', '--maxsize', '1024').returncode == 0
    path = _jsonl(tmp_path / 'lines.txt', ['first', 'second', 'x' * 1025, 'fourth'])
    out = ferroq(redis_url, *flags, 'rsmq', 'send', '-q', 'jobs', '--file', str(path), '--chunk', '2')
    assert out.returncode == 2
    assert out.stderr.startswith('ferroq: error: line 3: message is 1025 characters')
    assert out.stderr.endswith('; nothing of lines 3-4 was written\n')
    assert sorted(r.hget('rsmq:jobs:Q', i) for i in r.zrange('rsmq:jobs', 0, -1)) == ['first', 'second']
    out = ferroq(redis_url, *flags, 'rsmq', 'send', '-q', 'jobs', '--file', '-', stdin='third\nfourth\n')
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith('published 2 messages from standard input to RSMQ queue jobs in ')
    assert r.zcard('rsmq:jobs') == 4


def test_front_and_file_do_not_mix(redis_url, r, flags, tmp_path):
    path = _jsonl(tmp_path / 'messages.jsonl', _messages(3))
    out = ferroq(redis_url, *flags, 'publish', '-t', 'jobs', '--file', str(path), '-f')
    assert out.returncode == 2 and '--front' in out.stderr
    assert r.dbsize() == 0


def test_missing_file_and_bad_bytes_exit_2(redis_url, r, flags, tmp_path):
    out = ferroq(redis_url, *flags, 'publish', '-t', 'jobs', '--file', str(tmp_path / 'none.jsonl'))
    assert out.returncode == 2 and 'cannot read' in out.stderr
    (tmp_path / 'latin1.jsonl').write_bytes(b'{"a": "1"}\n{"a": "\xe9"}\n')
    out = ferroq(redis_url, *flags, 'publish', '-t', 'jobs', '--file', str(tmp_path / 'latin1.jsonl'))
    assert out.returncode == 2 and out.stderr.startswith('ferroq: error: line 2: not UTF-8')
    assert r.dbsize() == 0


def test_progress_bar_only_on_a_terminal(redis_url, r, tmp_path):
    path = _jsonl(tmp_path / 'messages.jsonl', _messages(3000))
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, '-m', 'ferroq', '--url', redis_url, 'publish', '-t', 'jobs', '--file', str(path)],
            stdout=subprocess.PIPE, stderr=follower, text=True, env={**os.environ, 'TERM': 'xterm', 'COLUMNS': '100'},
        )  # fmt: skip
        os.close(follower)
        follower = -1
        stdout, _ = proc.communicate(timeout=60)
        screen = b''
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the terminal's other end is closed
                break
            if not chunk:
                break
            screen += chunk
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)
    assert proc.returncode == 0
    assert stdout.startswith('published 3,000 messages')
    text = screen.decode()
    assert 'topic jobs' in text and '3,000 messages' in text and '━' in text  # rich's bar, drawn on stderr
    assert r.llen('rfq:jobs:backlog') == 3000


@pytest.mark.parametrize(
    ('cli_json', 'api_fields'),
    [
        ('{"k": "v", "empty": ""}', {'k': 'v', 'empty': ''}),
        ('{"n": 1, "x": 0.25, "big": 12345678901234567890}', {'n': '1', 'x': '0.25', 'big': '12345678901234567890'}),
        ('{}', {}),
        ('{"": "x"}', {'': 'x'}),
        ('{"k": true}', {'k': True}),
        ('{"k": null}', {'k': None}),
        ('{"k": ["a"]}', {'k': ['a']}),
        ('{"k": {"a": "b"}}', {'k': {'a': 'b'}}),
    ],
    ids=['strings', 'numbers', 'empty', 'empty-name', 'bool', 'null', 'list', 'object'],
)
def test_cli_and_api_accept_the_same_fields(redis_url, r, flags, make_client, cli_json, api_fields):
    """The command line takes the API's messages written as JSON (a number stands for its text, as in rfq's CLI).

    What one refuses the other refuses, with the API's wording; what one stores the other stores.
    """
    client = make_client(redis_url)
    try:
        api_id: str | None = client.topic('api').publish(api_fields)
        api_error = None
    except ValueError as exc:
        api_id, api_error = None, str(exc)
    out = ferroq(redis_url, *flags, 'publish', '-t', 'cli', '-m', cli_json)
    if api_error is None:
        assert out.returncode == 0, out.stderr
        assert r.hgetall(f'rfq:cli:message:{out.stdout.strip()}') == r.hgetall(f'rfq:api:message:{api_id}')
    else:
        assert out.returncode == 2
        if 'must be a str' in api_error:  # the CLI names the JSON value: got true / null / ["a"] / {"a": "b"}
            assert api_error.split(', got ')[0] in out.stderr.replace(' (or a number)', '')
        else:
            assert out.stderr == f'ferroq: error: {api_error}\n'
        assert r.exists('rfq:cli:backlog') == 0


def test_a_server_that_is_not_redis_is_one_line(flags):
    server = NotRedisServer(b'HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n')
    try:
        out = ferroq(server.url, *flags, 'list-topics')
    finally:
        server.close()
    assert out.returncode == 1
    assert out.stderr == (
        f'ferroq: error: the server at {server.url} does not speak the Redis protocol (not a Redis server?)\n'
    )


def test_the_first_bad_line_is_reported_while_the_next_chunk_is_read(redis_url, r, flags, tmp_path):
    """Chunk 2 is refused by the client while chunk 3 (with bad JSON) is being read: line 700 is the error."""
    lines = _messages(1500)
    lines[699] = '{"": "no name"}'
    lines[1199] = 'not json'
    path = _jsonl(tmp_path / 'messages.jsonl', lines)
    out = ferroq(redis_url, *flags, 'publish', '-t', 'jobs', '--file', str(path), '--chunk', '500')
    assert out.returncode == 2
    assert out.stderr == (
        'ferroq: error: line 700: message field names must be non-empty; nothing of lines 501-1000 was written\n'
    )
    assert out.stdout.startswith(f'published 500 messages from {path} to topic jobs before the error')
    assert r.llen('rfq:jobs:backlog') == 500
