"""Every client runs exactly the package's Lua scripts (same source, so same SHA1) and nothing else."""

from __future__ import annotations

import time

import pyarrow as pa

from ferroq import protocol


def test_only_the_protocol_scripts_are_loaded(client, r):
    assert r.info('memory')['number_of_cached_scripts'] == 0  # the fixture ran SCRIPT FLUSH
    t = client.topic('jobs')
    t.publish_batch([{'n': str(i)} for i in range(3)])
    t.publish({'n': 'one'})  # a publish of one message: publish_one-3
    t.publish_arrow(pa.table({'id': ['given-id'], 'n': ['3']}), id_column='id')  # the one use of publish-2n
    got = t.claim(count=2, lease=0.05)
    client.claim(['jobs', 'other'])
    t.extend(got[:1])
    t.release(got[:1])
    time.sleep(0.1)
    t.harvest()
    t.harvest(all=True)
    t.inspect()
    t.stats()
    [msg] = t.claim(owner='w1')
    t.resume('w1')
    t.dead_letter([msg.id], error='boom')
    [msg] = t.claim()
    t.commit([msg])
    t.purge()
    rfq = {name: sha for name, sha in protocol.script_hashes().items() if name.startswith('rfq/')}
    assert len(rfq) == 13
    assert r.script_exists(*rfq.values()) == [True] * len(rfq), dict(zip(rfq, r.script_exists(*rfq.values())))
    assert r.info('memory')['number_of_cached_scripts'] == len(rfq)


def test_rsmq_runs_exactly_the_rsmq_scripts(client, r):
    dead = client.rsmq('dead')
    dead.create()
    q = client.rsmq('jobs')
    q.create(max_receives=1, dead_letter='dead')
    q.set_attributes(vt=5)
    a, b = q.send_batch(['a', 'b'])
    q.receive(vt=0)
    q.change_visibility(b, 0)
    q.pop()
    q.delete(a)
    q.attributes()
    q.delete_queue()
    rsmq = {name: sha for name, sha in protocol.script_hashes().items() if name.startswith('rsmq/')}
    assert len(rsmq) == 8
    assert r.script_exists(*rsmq.values()) == [True] * len(rsmq), dict(zip(rsmq, r.script_exists(*rsmq.values())))
    assert r.info('memory')['number_of_cached_scripts'] == len(rsmq)
