"""``SCRIPT FLUSH`` over and over while producers and consumers run.

What it proves: NOSCRIPT never reaches the caller (the clients load the script and run the refused
commands again, also inside pipelines), and nothing is lost, duplicated or committed twice.
"""

from __future__ import annotations

import time

import pytest

from _adapters import KINDS
from conftest import wait_for

LEASE = 1.5


@pytest.mark.parametrize('impl', KINDS)
def test_script_flush_under_load(impl, server, r, procs, report):
    topic = 'flush'
    producers, _ = procs.load(
        impl,
        server.url,
        topic,
        {'batches': 40, 'batch': 25, 'pace': 0.03},
        {'count': 10, 'lease': LEASE, 'harvest_every': 0.3},
    )
    wait_for('the drivers to connect', lambda: len(r.client_list(_type='normal')) > 4, timeout=20)
    for flushes in range(2000):
        if all(procs.running[p].poll() is not None for p in producers) and flushes >= 30:
            break
        r.script_flush()
        procs.record('fault', kind='script-flush')
        time.sleep(0.05)
    counts = procs.settle(r, server.url, topic, producers, LEASE)
    report(f'script-flush[{impl}]', counts)
    counts.assert_targets(set())
    assert not counts.errors, f'errors reached the caller: {counts.samples["errors"]}'
    assert counts.duplicated == 0 and counts.indeterminate == 0
    noscript = int(r.info('errorstats').get('errorstat_NOSCRIPT', {}).get('count', 0))
    assert noscript > 0, 'no call met NOSCRIPT: the scenario did not test it'
