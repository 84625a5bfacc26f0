"""A process that used the asyncio client must exit cleanly, however quickly it ends after its last call.

If a runtime thread of ``ferroq.AsyncClient`` still runs Python code (handing a result to a loop that
cannot watch a socket, reading the iterable of ``publish_stream``) when the interpreter starts
finalizing, the process dies ("Fatal Python error: PyGILState_Release ... finalizing", SIGABRT or
SIGSEGV) after the program finished. The scenario drivers hit it at random; this test hits it on purpose.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

PROGRAM = """
import asyncio, sys
import ferroq, ferroq.pure

async def main(url, kind):
    cls = ferroq.AsyncClient if kind == 'native-async' else ferroq.pure.AsyncClient
    c = cls(url)
    t = c.topic('exit')
    for _ in range(10):
        await t.publish({'n': '1'})
        await t.commit(await t.claim(count=5, block=0.05, lease=5.0))
    await c.close()

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""
RUNS = 30


@pytest.mark.parametrize('impl', ['native-async', 'pure-async'])
def test_process_exits_cleanly_after_async_calls(impl, server):
    crashes = []
    for _ in range(RUNS):
        done = subprocess.run(
            [sys.executable, '-c', PROGRAM, server.url, impl], capture_output=True, timeout=60, check=False
        )
        if done.returncode != 0:
            crashes.append((done.returncode, done.stderr.decode(errors='replace')[-300:]))
    assert not crashes, f'{len(crashes)} of {RUNS} processes died at exit: {crashes[:2]}'
