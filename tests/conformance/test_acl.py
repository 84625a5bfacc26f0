"""Least-privilege ACL users (``ferroq.acl``, the README's rules) on every client kind and protocol.

Each role is set up with exactly the ``ACL SETUSER`` line ferroq documents, for the prefix ``jobs``. A
producer can publish and nothing else; a consumer can claim/commit, receive/delete, read/ack but not
purge, delete queues or publish; no user reaches a queue outside its prefix. Every refusal is
``PermissionDenied`` and leaves every key exactly as it was (compared with DUMP before and after).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from ferroq.acl import PROTOCOLS, ROLES, setuser
from ferroq.exceptions import InvalidArgument, PermissionDenied

#: The password of every test user (also the sentinel searched for in test_secrets.py's outputs).
PASSWORD = 'acl-Pa55-for-tests'


@pytest.fixture
def users(r: redis.Redis, redis_url: str) -> Iterator[Callable[[str, str], str]]:
    """``url(protocol, role)``: the URL of that role's user (prefix ``jobs``), made on first use."""
    made: list[str] = []

    def url(protocol: str, role: str) -> str:
        name = f'{protocol}-{role}'
        if name not in made:
            r.execute_command(*setuser(name, role, protocol, 'jobs', password=PASSWORD))  # type: ignore[arg-type]
            made.append(name)
        return redis_url.replace('redis://', f'redis://{name}:{PASSWORD}@')

    yield url
    for name in made:
        r.execute_command('ACL', 'DELUSER', name)


@pytest.fixture
def dump(redis_url: str) -> Iterator[Callable[[], dict[bytes, bytes]]]:
    raw = redis.Redis.from_url(redis_url)

    def snapshot() -> dict[bytes, bytes]:
        # Publish records are left out: a client deletes the ones it left ahead of its next request, refused or not.
        return {key: raw.dump(key) for key in raw.scan_iter(count=1000) if b':published:' not in key}

    yield snapshot
    raw.close()


def refused(dump: Callable[[], dict[bytes, bytes]], *calls: Callable[[], Any]) -> None:
    """Each call raises PermissionDenied and changes nothing."""
    for call in calls:
        before = dump()
        with pytest.raises(PermissionDenied):
            call()
        assert dump() == before


def test_rfq_roles(make_client, users, dump, r, redis_url):
    admin = make_client(users('rfq', 'admin'))
    producer = make_client(users('rfq', 'producer')).topic('jobs')
    consumer_client = make_client(users('rfq', 'consumer'))
    consumer = consumer_client.topic('jobs')
    a, _, c = producer.publish_batch([{'n': '1'}, {'n': '2'}, {'n': '3'}])
    make_client(redis_url).topic('other').publish({'n': 'x'})
    refused(
        dump,
        lambda: producer.claim(count=1),
        lambda: producer.commit([a]),
        lambda: producer.purge(),
        lambda: producer.stats(),
        lambda: producer.peek(a),
        lambda: make_client(users('rfq', 'producer')).topic('other').publish({'n': 'y'}),
    )
    [m1, m2] = consumer.claim(count=2, lease=30)
    assert consumer.commit([m1]) == [m1.id]
    assert consumer.extend([m2], lease=60) == [m2.id]
    assert consumer.release([m2]) == [m2.id]
    [m2] = consumer.claim(count=1, block=1)
    assert consumer.dead_letter([m2], error='bad') == [m2.id]
    assert consumer.harvest() == []
    assert consumer.stats().backlog == 1
    assert consumer.peek(c) == {'n': '3'}
    assert consumer_client.claim(['jobs'], count=1, block=0.05)
    refused(
        dump,
        lambda: consumer.publish({'n': '4'}),
        lambda: consumer.purge(),
        lambda: consumer.harvest(all=True),
        lambda: consumer.inspect(),
        lambda: consumer_client.topic('other').claim(count=1),
        lambda: consumer_client.topic('other').claim(count=1, block=0.05),
    )
    assert admin.topic('jobs.dead').purge() == 1
    assert admin.topic('jobs').stats().backlog == 0
    refused(dump, lambda: admin.topic('other').purge())
    assert r.llen('rfq:other:backlog') == 1


def test_rsmq_roles(make_client, users, dump, r, redis_url):
    admin = make_client(users('rsmq', 'admin'))
    admin.rsmq('jobs', realtime=True).create(vt=30)
    make_client(redis_url).rsmq('other').create()
    producer_client = make_client(users('rsmq', 'producer'))
    producer = producer_client.rsmq('jobs', realtime=True)
    consumer_client = make_client(users('rsmq', 'consumer'))
    consumer = consumer_client.rsmq('jobs', realtime=True)
    first, second, third = producer.send_batch(['a', 'b', 'c'])
    refused(
        dump,
        lambda: producer.receive(),
        lambda: producer.delete(first),
        lambda: producer.delete_queue(),
        lambda: producer.attributes(),
        lambda: producer_client.rsmq('jobs2').create(),
        lambda: producer_client.rsmq('other').send('x'),
    )
    message = consumer.receive(vt=30)
    assert message.id == first
    assert consumer.delete(first) is True
    assert consumer.change_visibility(second, 0) is True
    popped = consumer.pop().id
    assert popped in {second, third}
    assert consumer.attributes().msgs == 1
    refused(
        dump,
        lambda: consumer.send('d'),
        lambda: consumer.delete_queue(),
        lambda: consumer.set_attributes(vt=5),
        lambda: consumer_client.rsmq('jobs2').create(),
        lambda: consumer_client.rsmq('other').receive(),
    )
    assert consumer.receive(vt=30).id == ({second, third} - {popped}).pop()
    assert consumer.receive(block=0.2) is None  # waits on the realtime channel
    assert admin.rsmq_queues() == ['jobs', 'other']
    admin.rsmq('jobs').delete_queue()
    refused(dump, lambda: admin.rsmq('other').delete_queue())
    assert r.exists('rsmq:other:Q') == 1


def test_streams_roles(make_client, users, dump, r):
    admin = make_client(users('streams', 'admin'))
    admin.stream('jobs').group('workers').create(start='0')
    producer_client = make_client(users('streams', 'producer'))
    producer = producer_client.stream('jobs')
    consumer_client = make_client(users('streams', 'consumer'))
    group = consumer_client.stream('jobs').group('workers')
    ids = producer.publish_batch([{'n': '1'}, {'n': '2'}])
    refused(
        dump,
        lambda: producer.group('workers').read(count=1),
        lambda: producer.group('workers').create(),
        lambda: producer.length(),
        lambda: producer_client.stream('other').publish({'n': 'x'}),
    )
    entries = group.read(count=2)
    assert [e.id for e in entries] == ids
    assert group.ack(entries[:1]) == [ids[0]]
    assert len(group.pending()) == 1
    assert group.read(count=1, block=0.05) == []
    refused(
        dump,
        lambda: consumer_client.stream('jobs').publish({'n': '3'}),
        lambda: group.delete(),
        lambda: consumer_client.stream('jobs').delete(),
        lambda: consumer_client.stream('jobs').trim(maxlen=0),
        lambda: consumer_client.stream('other').group('workers').read(count=1),
    )
    assert admin.stream('jobs').length() == 2
    assert admin.stream('jobs').delete() is True
    refused(dump, lambda: admin.stream('other').publish({'n': 'x'}))
    assert r.exists('ferroq:stream:jobs', 'ferroq:stream:other') == 0


def test_the_rules_refuse_what_no_role_needs(r, redis_url):
    for protocol in PROTOCOLS:
        for role in ROLES:
            line = setuser('u', role, protocol, 'jobs', password=PASSWORD)
            assert not {'+eval', '+keys', '+flushall', '+flushdb', '+config', '+info', '+@all'} & set(line)
            assert line[:6] == ['ACL', 'SETUSER', 'u', 'reset', 'on', f'>{PASSWORD}']
            r.execute_command(*line)
    user = redis.Redis.from_url(redis_url.replace('redis://', f'redis://u:{PASSWORD}@'))
    for command in (('KEYS', '*'), ('FLUSHALL',), ('CONFIG', 'GET', 'maxmemory'), ('EVAL', 'return 1', '0')):
        with pytest.raises(redis.exceptions.NoPermissionError):
            user.execute_command(*command)
    user.close()
    r.execute_command('ACL', 'DELUSER', 'u')


def test_credentials_from_arguments_a_file_or_the_environment(make_client, users, redis_url, tmp_path, monkeypatch):
    users('rfq', 'producer')  # the user exists
    password_file = tmp_path / 'password'
    password_file.write_text(PASSWORD + '\n')  # a trailing newline, as editors and `echo` write it
    ways: list[dict[str, Any]] = [
        {'username': 'rfq-producer', 'password': PASSWORD},
        {'username': 'rfq-producer', 'password_file': str(password_file)},
        {'username': 'rfq-producer', 'password_file': password_file},
    ]
    for options in ways:
        assert make_client(redis_url, **options).topic('jobs').publish({'n': '1'})
    monkeypatch.setenv('FERROQ_USERNAME', 'rfq-producer')
    monkeypatch.setenv('FERROQ_PASSWORD_FILE', str(password_file))
    assert make_client(redis_url).topic('jobs').publish({'n': '2'})
    monkeypatch.setenv('FERROQ_PASSWORD', PASSWORD)  # wins over the file
    password_file.write_text('wrong')
    assert make_client(redis_url).topic('jobs').publish({'n': '3'})
    with pytest.raises(PermissionDenied):
        make_client(redis_url, password='wrong-password').topic('jobs').publish({'n': '4'})
    with pytest.raises(InvalidArgument, match='credentials already'):
        make_client(users('rfq', 'producer'), password=PASSWORD)
    with pytest.raises(InvalidArgument, match='conflict'):
        make_client(redis_url, password=PASSWORD, password_file=str(password_file))
    with pytest.raises(InvalidArgument, match='cannot be read'):
        make_client(redis_url, password_file=str(tmp_path / 'missing'))
    password_file.write_text('\n')
    with pytest.raises(InvalidArgument, match='is empty'):
        make_client(redis_url, password_file=str(password_file))


def test_a_worker_runs_as_the_consumer(make_client, impl, loop_thread, users, r, redis_url):
    import ferroq

    make_client(users('rfq', 'producer')).topic('jobs').publish_batch([{'n': str(i)} for i in range(4)])
    c = make_client(users('rfq', 'consumer'))
    done: list[str] = []

    def handle(msg: ferroq.Message) -> None:
        if msg.fields['n'] == '3':
            raise RuntimeError('poison')
        done.append(msg.fields['n'])

    async def handle_async(msg: ferroq.Message) -> None:
        handle(msg)

    options: dict[str, Any] = {'burst': True, 'poll': 0.05, 'handle_signals': False, 'retry_delay': 0.01}
    options['max_deliveries'] = 2
    if impl.endswith('async'):
        stats = loop_thread.run(ferroq.AsyncWorker(c.wrapped, ['jobs'], handle_async, **options).run())
    else:
        stats = ferroq.Worker(c, ['jobs'], handle, **options).run()
    assert sorted(done) == ['0', '1', '2']
    assert (stats.committed, stats.dead) == (3, 1)
    assert r.llen('rfq:jobs.dead:backlog') == 1  # the dead-letter topic lies under the prefix
