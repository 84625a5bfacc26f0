"""rfq's command line, verb for verb: the same shell session with the real ``rfq`` 1.4.0 and with ``ferroq``.

tests/interop/rfq_session.sh runs every rfq verb with long and short flags (and some usage errors) against the
test server, which both commands find through ``RFQ_REDIS_HOST``/``RFQ_REDIS_PORT``. The ids differ between
runs, so each is replaced by its order of first appearance before the outputs and the Redis states are compared.
Where ferroq differs on purpose (consume's lease and commit, the safe harvest, version, completions), a test
of its own shows it.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from _checks import signal_when

pytestmark = pytest.mark.interop

HERE = Path(__file__).resolve().parent
SESSION = HERE / 'rfq_session.sh'
FERROQ = Path(sys.executable).parent / 'ferroq'
ID = re.compile(r'\b[0-9a-f]{32}\b')
UNKNOWN_ID = '0123456789abcdef0123456789abcdef'  # the session peeks at it: never a real id
RFQ_VERBS = ['version', 'info', 'list-topics', 'list-queue', 'purge-queue', 'publish', 'consume', 'harvest', 'peek']


class Ids:
    """Replaces each 32-hex id by <id N>, N its order of first appearance (over stdout, then the keys)."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {UNKNOWN_ID: '<unknown id>'}

    def __call__(self, text: str) -> str:
        return ID.sub(lambda m: self.seen.setdefault(m.group(), f'<id {len(self.seen)}>'), text)


def _state(r: redis.Redis, ids: Ids) -> dict[str, object]:
    """Every key with its type and value, ids replaced."""
    state: dict[str, object] = {}
    for key in sorted(r.keys('*')):
        kind = r.type(key)
        if kind == 'list':
            value: object = [ids(v) for v in r.lrange(key, 0, -1)]
        elif kind == 'hash':
            value = list(r.hgetall(key).items())  # field order too: rfq prints the fields in it
        else:
            value = f'{kind} (not made by rfq)'
        state[ids(key)] = (kind, value)
    return state


def _session(cli: Path, env: dict[str, str], r: redis.Redis) -> tuple[str, dict[str, object]]:
    r.flushall()
    out = subprocess.run(
        ['bash', str(SESSION)], env={**env, 'CLI': str(cli)}, capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr
    ids = Ids()
    return ids(out.stdout), _state(r, ids)


def test_the_same_session_gives_the_same_output_and_state(rfq_python, rfq_env, redis_url, r):
    assert FERROQ.exists(), f'{FERROQ} is missing: the wheel is not installed in this venv'
    rfq_out, rfq_state = _session(rfq_python.parent / 'rfq', rfq_env, r)
    ferroq_out, ferroq_state = _session(FERROQ, rfq_env, r)
    assert ferroq_out == rfq_out
    assert ferroq_state == rfq_state
    # The session did what it says (so equal outputs are not equally empty).
    assert "{'tile': 'urgent'}\n-> 0\n{'tile': 'T32UNE', 'n': '1'}\n-> 0\n" in rfq_out
    assert '\\u043a\\u043b\\u044e\\u0447' in rfq_out  # peek prints JSON with ASCII escapes
    assert 'topic\t\tjobs\nbacklog\t\t3\t\t#############\nnextlog\t\t0\t\t\n' in rfq_out
    assert rfq_out.count('-> 2\n') == 7 and rfq_out.count('-> 1\n') == 1  # usage errors, then the unknown id
    assert set(rfq_state) == {'rfq:kept:backlog', 'rfq:kept:message:<id 6>', 'rfq:kept:message:<id 7>'}


def test_every_rfq_verb_is_in_the_session():
    verbs = {line.split()[1] for line in SESSION.read_text().splitlines() if line.startswith(('run ', 'sorted '))}
    assert set(RFQ_VERBS) - {'version'} <= verbs  # version: its last line (the Redis version) is compared
    assert '"$CLI" version | tail -n 1' in SESSION.read_text()


def _ferroq(env: dict[str, str], *args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(FERROQ), *args], env=env, capture_output=True, text=True, timeout=60, check=False, **kwargs
    )


def test_version_names_ferroq_and_the_server(rfq_env, redis_url, r):
    out = _ferroq(rfq_env, 'version')
    assert out.returncode == 0, out.stderr
    import ferroq

    assert out.stdout == f'ferroq {ferroq.__version__}\nredis {r.info("server")["redis_version"]}\n'


def test_completions_list_every_verb(rfq_python, rfq_env):
    rfq = subprocess.run(
        [str(rfq_python.parent / 'rfq'), 'completions', 'bash'], capture_output=True, text=True, timeout=30, check=False
    )
    rfq_verbs = re.fullmatch(r"complete -W '(.*)' rfq\n", rfq.stdout).group(1).split()
    out = _ferroq({**rfq_env, 'RFQ_REDIS_PORT': '1'}, 'completions', 'bash')  # needs no server
    assert out.returncode == 0, out.stderr
    verbs = re.fullmatch(r"complete -W '(.*)' ferroq\n", out.stdout).group(1).split()
    assert verbs[: len(rfq_verbs)] == rfq_verbs
    assert {'topics', 'claim', 'commit', 'rsmq', 'stream', 'worker', 'server', 'bench'} <= set(verbs)


def test_help_groups_rfq_verbs_apart(rfq_env):
    out = _ferroq(rfq_env, '--help')
    assert out.returncode == 0, out.stderr
    rfq_part, own_part = out.stdout.split("rfq's commands", 1)[1].split("ferroq's commands", 1)
    entries = [line.split()[0] for line in rfq_part.splitlines()[1:] if re.match(r'  \S', line)]
    assert entries == [*RFQ_VERBS, 'completions']
    assert 'claim' in own_part and 'list-queue' not in own_part


def test_harvest_is_the_safe_harvest(rfq_env, redis_url, r):
    """rfq's harvest requeues work in progress; ferroq's requeues only claims whose lease expired."""
    topic = 'jobs'
    for n in ('0', '1'):
        assert _ferroq(rfq_env, 'publish', '-t', topic, '-m', f'{{"n": "{n}"}}').returncode == 0
    held = _ferroq(rfq_env, '--json', 'claim', '-t', topic, '--lease', '600')
    short = _ferroq(rfq_env, '--json', 'claim', '-t', topic, '--lease', '0.2')
    assert held.returncode == short.returncode == 0
    short_id = re.search(r'"id": "([0-9a-f]{32})"', short.stdout).group(1)
    deadline = time.monotonic() + 10
    harvested: list[str] = []
    while not harvested and time.monotonic() < deadline:  # the 0.2 s lease expires (Redis clock)
        out = _ferroq(rfq_env, 'harvest', '-t', topic)
        assert out.returncode == 0, out.stderr
        harvested = out.stdout.split()
    assert harvested == [short_id]
    assert r.llen('rfq:jobs:nextlog') == 1  # the 600 s claim is still held


def test_consume_commits_only_after_printing(rfq_env, redis_url, r):
    msg_id = _ferroq(rfq_env, 'publish', '-t', 'jobs', '-m', '{"n": "1"}').stdout.strip()
    with open('/dev/full', 'w') as full:  # printing fails: the message must stay claimed, leased
        out = subprocess.run(
            [str(FERROQ), 'consume', '-t', 'jobs', '--lease', '600'],
            env=rfq_env, stdout=full, stderr=subprocess.PIPE, text=True, timeout=60, check=False,
        )  # fmt: skip
    assert out.returncode != 0
    assert r.lrange('rfq:jobs:nextlog', 0, -1) == [msg_id]
    [claim] = r.zrange('rfq:jobs:claim_leases', 0, -1)  # held under a lease
    assert r.hget('rfq:jobs:claims', claim).split(' ')[2:] == [msg_id]
    assert r.exists(f'rfq:jobs:message:{msg_id}') == 1
    # Printed: committed, nothing left.
    r.delete('rfq:jobs:nextlog', 'rfq:jobs:claims', 'rfq:jobs:claim_leases', 'rfq:jobs:inflight')
    r.lpush('rfq:jobs:backlog', msg_id)
    out = _ferroq(rfq_env, 'consume', '-t', 'jobs')
    assert (out.returncode, out.stdout) == (0, "{'n': '1'}\n")
    assert r.dbsize() == 0


def test_consume_block_gives_up_with_status_1(rfq_env, redis_url, r):
    out = _ferroq(rfq_env, 'consume', '-t', 'jobs', '--block', '0.3')
    assert (out.returncode, out.stdout) == (1, '')
    assert r.dbsize() == 0


def test_consume_interrupted_while_waiting_exits_0(rfq_env, redis_url, r):
    """As rfq: Ctrl-C while consume waits prints nothing and exits 0, and takes nothing."""
    # Other tests' clients may still be blocked on this server: count the new one.
    before = r.info('clients')['blocked_clients']
    proc = subprocess.Popen(
        [str(FERROQ), 'consume', '-t', 'jobs'],
        env=rfq_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # Ready once it waits in a blocking claim.
    stdout, stderr = signal_when(proc, signal.SIGINT, lambda: r.info('clients')['blocked_clients'] > before)
    assert (proc.returncode, stdout) == (0, ''), stderr
    assert r.llen('rfq:jobs:nextlog') == 0


def test_rfq_environment_is_honoured_and_ferroq_url_wins(rfq_env, redis_url, r):
    env = {**rfq_env, 'RFQ_REDIS_PORT': str(r.connection_pool.connection_kwargs['port'])}
    assert _ferroq(env, 'publish', '-t', 'jobs', '-m', '{"a": "b"}').returncode == 0
    assert r.llen('rfq:jobs:backlog') == 1
    unreachable = _ferroq({**env, 'FERROQ_URL': 'redis://127.0.0.1:1/0'}, 'list-topics')
    assert unreachable.returncode == 1 and unreachable.stdout == ''
    assert os.environ.get('FERROQ_URL') is None
