"""The native core and the Python package agree: same scripts (SHA1), same keys, same id format."""

from __future__ import annotations

import hashlib
import math
import time
import uuid
from pathlib import Path

import pytest

import ferroq
import ferroq._ferroq as native
from _checks import assert_rfq_id
from ferroq import protocol
from ferroq.protocol import keys
from ferroq.types import rsmq_sent

SOURCE_LUA = Path(__file__).resolve().parents[2] / 'python' / 'ferroq' / 'protocol' / 'lua'


def _lua_files(root: Path) -> dict[str, str]:
    """SHA1 of each script as sent: the shared prelude's blocks it uses followed by the script's file."""
    prelude = (root / 'prelude.lua').read_text(encoding='utf-8')
    return {
        f'{f.parent.name}/{f.stem}': hashlib.sha1(
            protocol.with_helpers(prelude, f.read_text(encoding='utf-8')).encode()
        ).hexdigest()
        for f in sorted(root.glob('*/*.lua'))
        if f.parent.name not in protocol.PYTHON_ONLY  # no Rust twin: benchmark baselines, the Spark connector's
    }


#: A prelude of every kind of block, in the source tree (not in the wheel); the Rust test
#: ``scripts::tests::with_helpers_takes_the_blocks_used`` reads the same file and expects the same texts.
PRELUDE_FIXTURE = SOURCE_LUA / 'fixtures' / 'prelude_blocks.lua'
BLOCK_A = '-- the first helper\nlocal function helper_a(x)\n  return x\n\nend\n\n'
BLOCK_B = '-- the second: uses the third\nlocal function helper_b(x)\n  return helper_c(x) -- not helper_a: a comment\nend\n\n'
BLOCK_C = (
    '--[[ a long comment naming helper_a ]]\nlocal shared = {}\nlocal function helper_c(x)\n  shared[x] = true\nend\n\n'
)


@pytest.mark.parametrize(
    ('script', 'blocks'),
    [
        ('return 1\n', ''),
        ('-- helper_a in a comment only\nreturn 1\n', ''),
        ('--[[ helper_b ]] return helper_a(1)\n', BLOCK_A),
        ('return helper_b(1)\n', BLOCK_B + BLOCK_C),
        ('shared[1] = helper_a(2)\n', BLOCK_A + BLOCK_C),
        ('return helper_a_longer()\n', 'local function helper_a_longer()\nend\n'),
        ('return xhelper_a(1) or helper_a_(2)\n', ''),
    ],
)
def test_scripts_are_sent_with_the_prelude_blocks_they_use(script, blocks):
    if not PRELUDE_FIXTURE.is_file():
        pytest.skip('no source tree next to the tests')
    prelude = PRELUDE_FIXTURE.read_text(encoding='utf-8')
    assert protocol.with_helpers(prelude, script) == blocks + script


def test_every_script_gets_only_the_helpers_it_names():
    # publish_one-3 uses call_in_slices alone; a script using none is sent as its file.
    lua = SOURCE_LUA if SOURCE_LUA.is_dir() else Path(protocol.__file__).parent / 'lua'
    one = protocol.script_source('rfq/publish_one-3')
    assert 'local function call_in_slices' in one
    assert one.count('local function') == 1
    assert protocol.script_source('rsmq/create-3') == (lua / 'rsmq' / 'create-3.lua').read_text(encoding='utf-8')


def test_native_and_python_load_the_same_scripts():
    hashes = protocol.script_hashes()
    assert native.script_hashes() == hashes
    assert {name for name in hashes if name.startswith('rfq/')} >= {
        'rfq/claim-8n',
        'rfq/commit-6n',
        'rfq/dead_letter-8n',
        'rfq/extend-5',
        'rfq/harvest-8',
        'rfq/harvest_all-7',
        'rfq/inspect-5',
        'rfq/publish-2n',
        'rfq/publish_one-3',
        'rfq/purge-6',
        'rfq/release-8',
        'rfq/resume-6',
        'rfq/stats-8',
    }
    assert {name for name in hashes if name.startswith('rsmq/')} == {
        'rsmq/attributes-2',
        'rsmq/create-3',
        'rsmq/delete-2',
        'rsmq/delete_queue-3',
        'rsmq/receive-4',
        'rsmq/send-3',
        'rsmq/set_attributes-2',
        'rsmq/visibility-2',
    }


def test_script_hashes_are_sha1_of_the_installed_files():
    installed = Path(protocol.__file__).parent / 'lua'
    assert _lua_files(installed) == protocol.script_hashes()


def test_installed_scripts_match_the_source_tree():
    if not SOURCE_LUA.is_dir():
        pytest.skip('no source tree next to the tests')
    assert _lua_files(SOURCE_LUA) == native.script_hashes(), 'the installed wheel is stale: run make build'


@pytest.mark.parametrize('topic', ['a', 'jobs', 'ndvi.T32UNE_2024-01', 'x' * 128])
def test_native_keys_match_protocol_keys(topic):
    assert native.rfq_keys(topic) == [
        *keys.rfq_topic_keys(topic),
        keys.rfq_message_prefix(topic),
        keys.rfq_claims(topic),
        keys.rfq_claim_leases(topic),
        keys.rfq_inflight(topic),
    ]
    assert keys.rfq_topic_keys(topic) == [
        f'rfq:{topic}:backlog',
        f'rfq:{topic}:nextlog',
        f'rfq:{topic}:leases',
        f'rfq:{topic}:deliveries',
    ]
    assert keys.rfq_message(topic, 'abc') == f'rfq:{topic}:message:abc'


@pytest.mark.parametrize(('ns', 'qname'), [('rsmq', 'jobs'), ('app:v1', 'A-z_09'), ('n' * 64, 'q' * 160)])
def test_native_rsmq_keys_match_protocol_keys(ns, qname):
    assert native.rsmq_keys(ns, qname) == keys.rsmq_keys(ns, qname)
    assert keys.rsmq_keys(ns, qname) == [f'{ns}:QUEUES', f'{ns}:{qname}', f'{ns}:{qname}:Q', f'{ns}:rt:{qname}']


@pytest.mark.parametrize(('ns', 'qname'), [('rsmq', 'a.b'), ('rsmq', 'q' * 161), ('a b', 'jobs'), ('', 'jobs')])
def test_native_rsmq_keys_validate(ns, qname):
    with pytest.raises(ferroq.InvalidName):
        native.rsmq_keys(ns, qname)


@pytest.mark.parametrize('name', ['a', 'events', 'ndvi.T32UNE_2024-01', 'x' * 128])
def test_native_stream_keys_match_protocol_keys(name):
    assert native.stream_keys(name) == [keys.stream_key(name)] == [f'ferroq:stream:{name}']
    token = uuid.uuid4().hex
    assert native.stream_published_key(name, token) == keys.stream_published(name, token)
    assert keys.stream_published(name, token) == f'ferroq:stream:{name}:published:{token}'


@pytest.mark.parametrize('name', ['', 'a:b', 'a b', 'x' * 129, 3])
def test_native_stream_keys_validate(name):
    with pytest.raises(ferroq.InvalidName):
        native.stream_keys(name)
    with pytest.raises(ferroq.InvalidName):
        native.stream_published_key(name, 'token')


@pytest.mark.parametrize('name', ['a', 'ndvi.T32UNE_2024-01', 'x' * 128])
def test_native_record_keys_match_protocol_keys(name):
    token = uuid.uuid4().hex
    assert native.rfq_published_key(name, token) == keys.rfq_published(name, token) == f'rfq:{name}:published:{token}'
    qname = name.replace('.', '_')
    assert native.rsmq_published_key('rsmq', qname, token) == keys.rsmq_published('rsmq', qname, token)
    assert keys.rsmq_published('ns', 'q', token) == f'ns:q:published:{token}'
    with pytest.raises(ferroq.InvalidName):
        native.rfq_published_key('a:b', token)
    with pytest.raises(ferroq.InvalidName):
        native.rsmq_published_key('rsmq', 'a.b', token)


@pytest.mark.parametrize(('key', 'chunk'), [('job-7', 3), ('é€😀' * 50, 0), ('k', 123456789)])
def test_dedup_tokens_match(key, chunk):
    assert native.dedup_token(key, chunk) == keys.dedup_token(key, chunk)
    assert keys.dedup_token(key, chunk) == hashlib.sha1(f'{key}:{chunk}'.encode()).hexdigest()[:32]


def test_rsmq_sent_reads_the_id_time():
    assert rsmq_sent('hoffhv5l3njYWTFbRSeb8pK7HNzgE0kN') == int('hoffhv5l3n', 36) / 1000
    assert math.isnan(rsmq_sent('X:' * 16))
    assert math.isnan(rsmq_sent('short'))


def test_new_message_id_format():
    before = time.time()
    u = assert_rfq_id(native.new_message_id())
    after = time.time()
    # uuid1 time: 100 ns intervals since 1582-10-15.
    seconds = (u.time - 0x01B21DD213814000) / 1e7
    assert before - 1 <= seconds <= after + 1


def test_new_message_ids_increase_and_are_unique():
    ids = [native.new_message_id() for _ in range(5000)]
    assert len(set(ids)) == len(ids)
    times = [uuid.UUID(hex=i).time for i in ids]
    assert times == sorted(times)
    nodes = {uuid.UUID(hex=i).node for i in ids[:100]}
    assert all(n & (1 << 40) for n in nodes)


def test_version():
    assert isinstance(ferroq.__version__, str) and ferroq.__version__
    assert native.__version__ == ferroq.__version__


def test_public_api_exports():
    for name in ferroq.__all__:
        assert hasattr(ferroq, name), name
    assert ferroq.Client is native.Client
    assert ferroq.AsyncClient is native.AsyncClient
    assert ferroq.RsmqQueue is native.RsmqQueue
    assert ferroq.AsyncRsmqQueue is native.AsyncRsmqQueue
    for name in ('Stream', 'AsyncStream', 'ConsumerGroup', 'AsyncConsumerGroup'):
        assert getattr(ferroq, name) is getattr(native, name)
    for name in ('StreamEntry', 'PendingEntry', 'GroupInfo', 'StreamInfo'):
        assert name in ferroq.__all__
