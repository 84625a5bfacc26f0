#!/usr/bin/env python3
"""Smoke test of an installed ferroq (a wheel or an sdist, in a venv of its own): run it with that venv's Python.

It connects, publishes, claims and commits on an rfq topic with the native, native asyncio and pure clients,
sends, receives and deletes on an RSMQ queue, and drives the same through the ``ferroq`` command. The
server is a ``redis-server`` from PATH that it starts on a free loopback port (``--url`` to use another
one instead). ``--offline`` (a platform with no redis-server, such as Windows on CI) checks what needs no
server: the import, validation before I/O, a typed error for a refused connection, and the CLI's help.
``--no-rust`` first checks that no Rust toolchain is on PATH (the wheel must not need one).

Everything runs from a temporary directory, so a source checkout is never what gets imported.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

START_TIMEOUT = 10.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = int(s.getsockname()[1])
    return port if port != 6379 else free_port()


def start_redis(directory: Path) -> tuple[subprocess.Popen[bytes], str]:
    exe = shutil.which('redis-server')
    if exe is None:
        raise SystemExit('smoke: no redis-server on PATH (use --url, or --offline)')
    port = free_port()
    args = [exe, '--port', str(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', str(directory)]  # fmt: skip
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(('127.0.0.1', port), timeout=0.5) as s:
                s.sendall(b'PING\r\n')
                if s.recv(16).startswith(b'+PONG'):
                    return proc, f'redis://127.0.0.1:{port}/0'
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit(f'smoke: redis-server on port {port} did not answer within {START_TIMEOUT:g} s')


def cli(url: str | None, *args: str) -> Any:
    """Runs the installed ``ferroq`` command; its JSON output when ``--json`` is among ``args``."""
    scripts = Path(sys.executable).parent
    exe = scripts / ('ferroq.exe' if os.name == 'nt' else 'ferroq')
    command = [str(exe), *(['--url', url] if url else []), *args]
    out = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    if out.returncode != 0:
        raise AssertionError(f'{command} exited with {out.returncode}: {out.stderr.strip()}')
    return json.loads(out.stdout) if '--json' in args else out.stdout


def check_install() -> str:
    import ferroq
    import ferroq._ferroq as native

    here = Path.cwd().resolve()
    for module in (ferroq, native):
        assert module.__file__ and here not in Path(module.__file__).resolve().parents, module.__file__
    return f'ferroq {ferroq.__version__} from {Path(native.__file__).name}'


def offline() -> None:
    import ferroq
    import ferroq.pure
    from ferroq.exceptions import ConnectionFailed, InvalidName

    for cls in (ferroq.Client, ferroq.pure.Client):
        c = cls(f'redis://127.0.0.1:{free_port()}/0', connect_timeout=2.0)
        try:
            c.topic('bad name!')
        except InvalidName:
            pass
        else:
            raise AssertionError(f'{cls.__name__}: an invalid topic name was accepted')
        try:
            c.topic('jobs').publish({'n': '1'})
        except ConnectionFailed:
            pass
        else:
            raise AssertionError(f'{cls.__name__}: publish to a closed port succeeded')
        c.close()
    assert 'publish' in cli(None, '--help')


def online(url: str) -> None:
    import ferroq
    import ferroq.pure

    for cls in (ferroq.Client, ferroq.pure.Client):
        with cls(url) as c:
            topic = c.topic(f'smoke-{uuid.uuid4().hex[:8]}')
            ids = [topic.publish({'n': str(i)}) for i in range(3)]
            claimed = topic.claim(count=2, lease=30)
            assert [m.id for m in claimed] == ids[:2], (claimed, ids)
            assert sorted(topic.commit(claimed)) == sorted(ids[:2])
            stats = topic.stats()
            assert (stats.backlog, stats.nextlog) == (1, 0), stats
            q = c.rsmq(f'smoke{uuid.uuid4().hex[:8]}')
            q.create(vt=30)
            sent = q.send('hello')
            got = q.receive()
            assert got is not None and (got.id, got.message) == (sent, 'hello'), got
            assert q.delete(sent)
            q.delete_queue()

    async def native_async() -> None:
        c = ferroq.AsyncClient(url)
        topic = c.topic(f'smoke-{uuid.uuid4().hex[:8]}')
        mid = await topic.publish({'n': 'async'})
        (m,) = await topic.claim()
        assert m.id == mid and m.fields == {'n': 'async'}, m
        assert await topic.commit([m]) == [mid]
        await c.close()

    asyncio.run(native_async())

    name = f'smoke-cli-{uuid.uuid4().hex[:8]}'
    (mid,) = cli(url, '--json', 'publish', '-t', name, '-m', '{"n": "cli"}')
    claimed = cli(url, '--json', 'claim', '-t', name)
    assert (claimed['id'], claimed['fields']) == (mid, {'n': 'cli'}), claimed
    cli(url, 'commit', '-t', name, mid)
    left = [s for s in cli(url, '--json', 'stats') if s['topic'] == name and (s['backlog'] or s['nextlog'])]
    assert not left, left  # committed: nothing waiting or in flight (an empty topic is not listed at all)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    parser.add_argument('--url', help='a Redis to use instead of starting redis-server')
    parser.add_argument('--offline', action='store_true', help='only what needs no server')
    parser.add_argument('--no-rust', action='store_true', help='fail if cargo or rustc is on PATH')
    args = parser.parse_args()
    if args.no_rust:
        found = [tool for tool in ('cargo', 'rustc') if shutil.which(tool)]
        assert not found, f'a Rust toolchain is on PATH: {found}'
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        what = check_install()
        if args.offline:
            offline()
            print(f'smoke: {what}: offline checks passed')
            return
        proc = None
        url = args.url
        if url is None:
            proc, url = start_redis(Path(tmp))
        try:
            online(url)
            offline()
        finally:
            if proc is not None:
                proc.terminate()
                proc.wait(timeout=10)
        print(f'smoke: {what}: clients and CLI passed against {url}')


if __name__ == '__main__':
    main()
