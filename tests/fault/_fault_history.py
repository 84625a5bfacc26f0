"""The history of a fault scenario: one JSONL file per process, one event per line.

Every process (producer, consumer, the test itself, the final drain) appends its own events with one
``write()`` on an ``O_APPEND`` descriptor, so a SIGKILL never leaves half a line behind another one. It may
cut the process's own last line short, though: a write of more than a page stops between pages when a
fatal signal arrives. Readers take complete lines only (see :func:`events`).
Times are ``time.monotonic()``, which is one clock for every process on the machine.

Events (``ev``), besides ``proc`` and ``t``:

- ``start`` / ``exit``: a process began / ended on its own (a killed process has no ``exit``);
- ``pub``: ``keys`` attempted in one publish_batch; ``ok`` with the ``ids``, or ``err`` (outcome unknown);
- ``claim``: ``t0`` (sent) and ``msgs``: ``[key, id, deliveries, intact]`` for each message, or ``err``;
- ``committing``: the ``ids`` about to be committed (a kill after it may leave the commit applied);
- ``commit``: ``t0``, ``ids`` sent and ``done`` (the ids the call reported committed), or ``err``;
- ``fault``: what the test did (``kill``, ``stop``, ``cont``, ``server-kill``, ``server-ready``, ...).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

FIELD_KEY = 'k'
FIELD_CHECK = 'c'


def body(key: str, pad: int = 0) -> dict[str, str]:
    """The fields of the message with producer key ``key``: the key and a checksum of it (plus padding)."""
    fields = {FIELD_KEY: key, FIELD_CHECK: hashlib.sha1(key.encode()).hexdigest()[:12]}
    if pad:
        fields['pad'] = 'x' * pad
    return fields


def intact(fields: dict[str, str]) -> bool:
    """The message came out as it went in (key and checksum agree)."""
    key = fields.get(FIELD_KEY, '')
    return bool(key) and fields.get(FIELD_CHECK) == hashlib.sha1(key.encode()).hexdigest()[:12]


def delivery(msg: Any) -> list[Any]:
    """A delivered message (rfq Message or StreamEntry) as a ``claim`` event lists it: key, id, deliveries, intact."""
    return [msg.fields.get(FIELD_KEY, ''), msg.id, msg.deliveries, intact(msg.fields)]


class Recorder:
    """Appends the events of one process to ``<directory>/<proc>.jsonl``."""

    def __init__(self, directory: Path | str, proc: str) -> None:
        self.proc = proc
        path = Path(directory) / f'{proc}.jsonl'
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def __call__(self, ev: str, **data: Any) -> None:
        line = json.dumps({'ev': ev, 'proc': self.proc, 't': time.monotonic(), **data}, separators=(',', ':'))
        os.write(self._fd, (line + '\n').encode())

    def close(self) -> None:
        os.close(self._fd)


def events(path: Path) -> list[dict[str, Any]]:
    """The events of one process's file, complete lines only: a running process may be halfway through its
    last line, and a killed one may have been cut short in it (a process killed while it wrote an event
    counts as killed before it)."""
    complete = path.read_text().rpartition('\n')[0]
    return [json.loads(line) for line in complete.splitlines() if line.strip()]


def read(directory: Path) -> Iterator[dict[str, Any]]:
    """Every event of every process, file by file, in the order each process wrote them."""
    for path in sorted(directory.glob('*.jsonl')):
        yield from events(path)
