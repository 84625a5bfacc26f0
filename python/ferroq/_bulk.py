"""Bulk publishing from a file for the ``ferroq`` command: ``--file PATH`` (``-`` for standard input).

Lines are read and sent in chunks (one ``publish_batch`` / ``send_batch`` call each, so memory stays bounded
and a chunk is checked whole before it is written). A bad line stops the run: it is reported by its line
number, nothing of its chunk is written, and the chunks before it stay published. A progress bar (``rich``)
is drawn on standard error only when that is a terminal; a summary line goes to standard output.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import IO, Any, Callable, TypeVar

from ferroq.exceptions import BatchError, FerroqError, InvalidArgument, InvalidMessage

__all__ = ['DEFAULT_CHUNK', 'add_file_options', 'fields_from_json', 'lines_error', 'publish_file']

#: Lines per chunk: the clients' default chunk_size, so each chunk is one atomic script call.
DEFAULT_CHUNK = 1000

Item = TypeVar('Item')


def fields_from_json(text: str, where: str) -> dict[str, str]:
    """A message from a JSON object, as the API takes it: string fields as they are.

    A JSON number is taken as its text (``1`` -> ``'1'``, ``0.5`` -> ``'0.5'``), which is what rfq's command
    line stored. Everything else the API would refuse (booleans, null, arrays, objects, infinities) is refused
    here with the API's wording; empty messages and field names are left to the API's own check.
    """
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise InvalidMessage(f'{where}: invalid JSON: {exc}') from None
    if not isinstance(value, dict):
        raise InvalidMessage(f'{where}: a message must be a JSON object, got {type(value).__name__}')
    fields = {}
    for key, item in value.items():
        if isinstance(item, str):
            fields[key] = item
        elif isinstance(item, (int, float)) and not isinstance(item, bool) and math.isfinite(item):
            fields[key] = repr(item)  # what redis-py (and so rfq's CLI) writes for a number
        else:
            shown = json.dumps(item)
            raise InvalidMessage(f'{where}: message field {key!r} must be a str (or a number), got {shown}')
    return fields


def lines_error(exc: BatchError, lines: list[int], outcome: str) -> InvalidMessage:
    """``exc`` of a batch read from lines, its bad items named by line number (``lines[i]``: item i's)."""
    named = '; '.join(f'line {lines[i]}: {e}' for i, e in exc.errors[: BatchError.NAMED])
    more = len(exc.errors) - BatchError.NAMED
    return InvalidMessage(f'{named}' + (f'; and {more} more bad lines' if more > 0 else '') + f'; {outcome}')


def add_file_options(source: Any, p: argparse.ArgumentParser, what: str) -> None:
    """``--file`` in the message-source group ``source`` of ``p``, and ``--chunk`` on ``p``."""
    source.add_argument('--file', metavar='PATH', help=f"{what} per line from a file ('-': standard input), "
                        'sent in chunks with a progress bar and a summary line')  # fmt: skip
    p.add_argument('--chunk', type=int, default=DEFAULT_CHUNK,
                   help=f'lines per chunk with --file (default {DEFAULT_CHUNK})')  # fmt: skip


@contextlib.contextmanager
def _open(path: str) -> Iterator[tuple[IO[bytes], int | None]]:
    """The file as bytes and its size when known (for the progress bar)."""
    if path == '-':
        yield sys.stdin.buffer, None
        return
    try:
        f = open(path, 'rb')  # noqa: SIM115 - closed below
    except OSError as exc:
        raise InvalidArgument(f'cannot read {path}: {exc.strerror}') from None
    with f:
        size = os.fstat(f.fileno()).st_size if os.path.isfile(path) else None
        yield f, size


def _chunks(
    f: IO[bytes], parse: Callable[[str, int], Item | None], chunk: int
) -> Iterator[tuple[list[Item], list[int], int]]:
    """(items, their line numbers, bytes read) per chunk; ``parse`` returns None for a line to skip."""
    items: list[Item] = []
    lines: list[int] = []
    size = 0
    for number, raw in enumerate(f, 1):
        size += len(raw)
        try:
            text = raw.decode('utf-8')
        except UnicodeDecodeError as exc:
            raise InvalidMessage(f'line {number}: not UTF-8 ({exc.reason} at byte {exc.start})') from None
        item = parse(text.rstrip('\r\n'), number)
        if item is None:
            continue
        items.append(item)
        lines.append(number)
        if len(items) == chunk:
            yield items, lines, size
            items, lines, size = [], [], 0
    if items or size:
        yield items, lines, size


class _Progress:
    """A rich progress bar on a terminal's standard error; nothing otherwise."""

    def __init__(self, label: str, total: int | None) -> None:
        self._bar: Any = None
        if not sys.stderr.isatty():
            return
        from rich.console import Console
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn

        self._bar = Progress(
            TextColumn('{task.description}'),
            BarColumn(),
            DownloadColumn(),
            TextColumn('{task.fields[messages]:,} messages'),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self._task = self._bar.add_task(label, total=total, messages=0)
        self._bar.start()

    def advance(self, size: int, messages: int) -> None:
        if self._bar is not None:
            self._bar.update(self._task, advance=size, messages=messages)

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()


def publish_file(
    args: argparse.Namespace,
    target: str,
    parse: Callable[[str, int], Item | None],
    send: Callable[[list[Item]], list[str]],
) -> int:
    """Send ``args.file`` chunk by chunk with ``send``; ``target`` names the queue in the summary line.

    One chunk is sent (on a helper thread: the clients release the GIL while they wait) while the next one
    is read and parsed, never more; a chunk is sent only once the one before it succeeded.
    """
    if args.chunk < 1:
        raise InvalidArgument(f'--chunk must be at least 1, got {args.chunk}')
    source = 'standard input' if args.file == '-' else args.file
    published = 0
    started = time.monotonic()
    error: FerroqError | None = None
    with _open(args.file) as (f, total), ThreadPoolExecutor(1, thread_name_prefix='ferroq-bulk') as sender:
        progress = _Progress(target, total)
        in_flight: tuple[Future[list[str]], list[int], int] | None = None

        def settle() -> None:
            """Wait for the chunk in flight and count it."""
            nonlocal in_flight, published
            assert in_flight is not None
            (sent, lines, size), in_flight = in_flight, None
            try:
                published += len(sent.result())
            except BatchError as exc:
                raise lines_error(exc, lines, f'nothing of lines {lines[0]}-{lines[-1]} was written') from None
            progress.advance(size, published)

        try:
            try:
                for items, lines, size in _chunks(f, parse, args.chunk):
                    if in_flight is not None:
                        settle()
                    if items:
                        in_flight = sender.submit(send, items), lines, size
                    else:
                        progress.advance(size, published)
            except FerroqError as exc:
                error = exc
            if in_flight is not None:
                try:
                    settle()
                except FerroqError as exc:
                    error = exc  # its lines come before those of an error while reading
        finally:
            progress.stop()
    seconds = time.monotonic() - started
    rate = f', {published / seconds:,.0f} messages/s' if seconds > 0 and published else ''
    if args.json:
        print(json.dumps({'target': target, 'source': source, 'published': published, 'seconds': round(seconds, 3)}))
    else:
        stopped = ' before the error' if error is not None else ''
        print(f'published {published:,} messages from {source} to {target}{stopped} in {seconds:.2f} s{rate}')
    if error is not None:
        error.published = published
        raise error
    return 0
