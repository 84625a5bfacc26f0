"""``ferroq top`` in a real terminal: tmux runs it, the test reads the screen (capture-pane) and types keys.

Every wait polls the captured pane for a condition, with a generous limit; nothing sleeps a fixed time.
Each test has its own tmux server (``-L``), killed at the end.
"""

from __future__ import annotations

import contextlib
import shlex
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import ferroq.pure

#: Longest wait for one screen condition (a refresh takes a fraction of a second; Textual starts in ~1 s).
WAIT = 60.0
KINDS = ('topic', 'rsmq', 'stream', 'group')


class Pane:
    """One command in a detached tmux session of a private tmux server; the pane stays after it exits."""

    def __init__(self, directory: Path, command: list[str]) -> None:
        tmux = shutil.which('tmux')
        assert tmux is not None, 'tmux is not installed: run `make setup` (apt-get install tmux)'
        self.tmux = [tmux, '-L', f'ferroq-test-{uuid.uuid4().hex[:12]}']
        config = directory / 'tmux.conf'
        # remain-on-exit from the start: the pane (and its exit status) outlives a command that exits at once
        config.write_text('set -g remain-on-exit on\n')
        # COLUMNS and LINES (set by some shells and by pytest's terminal) would override the pane's size
        size = ['env', '-u', 'COLUMNS', '-u', 'LINES']
        # The exit status goes to a file: tmux may mark the pane dead (its terminal closed) and never record
        # the status. (The live view reads Ctrl-C as a key, the terminal in raw mode: no SIGINT reaches sh.)
        self.status_file = directory / 'exit-status'
        record = ['sh', '-c', f'"$@"; echo $? > {shlex.quote(str(self.status_file))}', 'sh']
        self.run('-f', str(config), 'new-session', '-d', '-s', 'top', '-x', '160', '-y', '30', *record, *size, *command)

    def run(self, *args: str) -> str:
        return subprocess.run(
            [*self.tmux, *args], capture_output=True, text=True, timeout=30, check=True, stdin=subprocess.DEVNULL
        ).stdout

    def screen(self) -> str:
        return self.run('capture-pane', '-p', '-t', 'top')

    def keys(self, *keys: str, literal: bool = False) -> None:
        self.run('send-keys', '-t', 'top', *(['-l'] if literal else []), *keys)

    def exit_status(self) -> int | None:
        """The command's exit status once it ended (128 + N for signal N, as sh reports it), else None."""
        text = self.status_file.read_text() if self.status_file.exists() else ''
        return int(text) if text.endswith('\n') else None  # the file is complete once its newline is there

    def wait(self, what: str, condition: Callable[[str], bool]) -> str:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            screen = self.screen()
            if condition(screen):
                return screen
            if self.exit_status() is not None:
                pytest.fail(f'ferroq top exited while waiting for {what}:\n{screen}')
            time.sleep(0.05)
        pytest.fail(f'no {what} within {WAIT:g} s; the screen:\n{self.screen()}')

    def wait_exit(self) -> int:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            status = self.exit_status()
            if status is not None:
                return status
            time.sleep(0.05)
        pytest.fail(f'ferroq top did not exit within {WAIT:g} s; the screen:\n{self.screen()}')

    def close(self) -> None:
        with contextlib.suppress(subprocess.SubprocessError):
            self.run('kill-server')


def table(screen: str) -> dict[tuple[str, str], list[str]]:
    """The rows on the screen by (kind, name): the cells after the name (a group's name is '<stream> > <group>')."""
    out = {}
    for line in screen.splitlines():
        cells = line.split()
        if cells and cells[0] in KINDS:
            if cells[0] == 'group':
                cells = [cells[0], ' '.join(cells[1:4]), *cells[4:]]
            out[cells[0], cells[1]] = cells[2:]
    return out


def row_names(screen: str) -> list[str]:
    return [name for _, name in table(screen)]


@pytest.fixture
def top(redis_url: str, tmp_path: Path) -> Iterator[Pane]:
    pane = Pane(tmp_path, [sys.executable, '-m', 'ferroq', '--url', redis_url, 'top', '--interval', '0.3'])
    try:
        yield pane
    finally:
        pane.close()


@pytest.fixture
def client(redis_url: str) -> Iterator[ferroq.pure.Client]:
    """What writes the queues top shows (top itself reads the same way whichever client wrote them)."""
    with ferroq.pure.Client(redis_url) as c:
        yield c


def seed(client) -> None:
    """jobs: 3 waiting, 2 claimed; jobs.dead: 1; RSMQ emails: 1 received; stream events: 2 entries, group billing
    read 1 (pending 1, lag 1)."""
    jobs = client.topic('jobs')
    jobs.publish_batch([{'n': str(i)} for i in range(5)])
    jobs.claim(2, lease=300)
    client.topic('jobs.dead').publish({'n': 'dead'})
    emails = client.rsmq('emails')
    emails.create(vt=300)
    emails.send('hello')
    assert emails.receive() is not None
    events = client.stream('events')
    events.publish({'k': '1'})
    events.group('billing').create(start='0')
    events.publish({'k': '2'})
    assert len(events.group('billing').read(1)) == 1


def test_top_live_view(client, redis_url, top):
    seed(client)
    # (kind, name) -> the first cells after the name: DEPTH IN_FLIGHT EXPIRED DELAYED DEAD; a group's from IN_FLIGHT
    expected = {
        ('topic', 'jobs'): ['3', '2', '0', '0', '1'],
        ('topic', 'jobs.dead'): ['1', '0', '0', '0', '-'],
        ('rsmq', 'rsmq:emails'): ['0', '1', '-', '-', '-'],
        ('stream', 'events'): ['2', '1', '-', '-', '-'],
    }

    def shown(screen: str) -> bool:  # top started before the seed: wait for a refresh that saw all of it
        rows = table(screen)
        billing = rows.get(('group', 'events > billing'), [])
        return {key: rows.get(key, [])[:5] for key in expected} == expected and billing[1:2] + billing[-2:] == [
            '1', '1', '1'
        ]  # fmt: skip

    screen = top.wait('the seeded figures', shown)
    print(f'\nferroq top, as tmux shows it:\n{screen}')
    assert len(table(screen)) == 5

    # Refreshes in place: messages published now show up, with a publish rate.
    stop = threading.Event()

    def publish() -> None:
        jobs = client.topic('jobs')
        for _ in range(2000):  # bounded: 100 s at most
            if stop.wait(0.05):
                return
            jobs.publish({'n': 'live'})

    publisher = threading.Thread(target=publish, daemon=True)
    publisher.start()
    try:
        top.wait('a publish rate on jobs', lambda s: table(s).get(('topic', 'jobs'), ['0'] * 6)[5] not in ('0.0', '-'))
    finally:
        stop.set()
        publisher.join(10)
    published = client.topic('jobs').stats().backlog
    top.wait(f'depth {published} on jobs', lambda s: table(s).get(('topic', 'jobs'), [''])[0] == str(published))

    # Sort: s moves to the next column (DEPTH), r reverses.
    top.keys('s')
    screen = top.wait('the sort by depth', lambda s: 'sort DEPTH asc' in s)
    depths = [int(cells[0]) for (kind, _), cells in table(screen).items() if kind != 'group']
    assert depths == sorted(depths)
    top.keys('r')
    screen = top.wait('the reversed sort', lambda s: 'sort DEPTH desc' in s)
    assert row_names(screen)[0] == 'jobs'

    # Filter by name: / opens the box, Enter keeps the filter, Escape clears it.
    top.keys('/')
    top.wait('the filter box', lambda s: 'filter by name' in s)
    top.keys('EMA', literal=True)
    top.wait('only rsmq:emails', lambda s: row_names(s) == ['rsmq:emails'] and "filter 'EMA'" in s)
    top.keys('Enter')
    top.wait('the filter box closed', lambda s: 'filter by name' not in s and '/ filter' in s)
    top.keys('Escape')
    top.wait('every row again', lambda s: len(row_names(s)) == 5)

    top.keys('q')
    assert top.wait_exit() == 0


def test_top_quits_on_ctrl_c(client, redis_url, top):
    client.topic('jobs').publish({'n': '1'})
    top.wait('the topic', lambda s: ('topic', 'jobs') in table(s))
    top.keys('C-c')
    assert top.wait_exit() == 0
