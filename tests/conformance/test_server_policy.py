"""The warning at connect when the server's eviction policy can silently drop queue keys."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest

EVICTION = 'maxmemory-policy'


@pytest.fixture
def policy(r) -> Iterator[str]:
    """Sets the test server's eviction policy for one test (restored afterwards)."""
    before = r.config_get(EVICTION)[EVICTION]
    try:
        yield before
    finally:
        r.config_set(EVICTION, before)


def _eviction_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if EVICTION in str(w.message)]


def _calls(client) -> None:
    t = client.topic('jobs')
    t.publish({'n': '0'})
    assert [m.fields for m in t.claim()] == [{'n': '0'}]
    client.ping()


@pytest.mark.parametrize('evicting', ['allkeys-lru', 'allkeys-random', 'volatile-lru'])
def test_warns_once_when_the_server_may_evict(make_client, redis_url, r, policy, evicting):
    r.config_set(EVICTION, evicting)
    c = make_client(redis_url)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        _calls(c)
        _calls(c)
    [message] = _eviction_warnings(caught)
    assert f'{EVICTION} {evicting}' in message and 'noeviction' in message
    assert redis_url in message
    assert all(issubclass(w.category, RuntimeWarning) for w in caught if EVICTION in str(w.message))


def test_no_warning_with_noeviction(make_client, redis_url, r, policy):
    r.config_set(EVICTION, 'noeviction')
    c = make_client(redis_url)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        _calls(c)
    assert _eviction_warnings(caught) == []


def test_policy_read_from_info_when_config_is_denied(make_client, redis_server, redis_url, r, policy):
    """A user without CONFIG (a common ACL) still gets the warning: the policy comes from INFO."""
    r.config_set(EVICTION, 'allkeys-lfu')
    r.acl_setuser('noconfig', enabled=True, passwords=['+pw-noconfig'], keys=['*'], commands=['+@all', '-config'])
    try:
        c = make_client(f'redis://noconfig:pw-noconfig@127.0.0.1:{redis_server.port}/0')
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            _calls(c)
        [message] = _eviction_warnings(caught)
        assert f'{EVICTION} allkeys-lfu' in message
        assert 'pw-noconfig' not in message
    finally:
        r.acl_deluser('noconfig')
