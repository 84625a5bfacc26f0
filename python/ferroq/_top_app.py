"""The Textual app of ``ferroq top`` (see :mod:`ferroq._top`; imported only for the live view)."""

from __future__ import annotations

import asyncio
import time
from typing import ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Footer, Input, Static

from ferroq._figures import Sampler, Snapshot
from ferroq._top import _NAME, COLUMNS, rows
from ferroq.exceptions import FerroqError

__all__ = ['TopApp']


class TopApp(App[None]):
    """The live view: a table refreshed every ``interval`` seconds from a :class:`Sampler` read in a thread."""

    TITLE = 'ferroq top'
    CSS = """
    #status { height: 1; background: $boost; }
    #filter { dock: bottom; display: none; }
    #filter.active { display: block; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding('q', 'quit', 'quit'),
        Binding('ctrl+c', 'quit', 'quit', show=False, priority=True),
        Binding('s', 'sort', 'sort'),
        Binding('r', 'reverse', 'reverse'),
        Binding('slash', 'filter', 'filter'),
        Binding('escape', 'clear_filter', 'clear filter'),
    ]

    def __init__(self, sampler: Sampler, interval: float, match: str) -> None:
        super().__init__()
        self.sampler = sampler
        self.interval = interval
        self.sort_column = _NAME
        self.reverse = False
        self.match = match
        self.snapshot: Snapshot | None = None
        self.error: str | None = None
        self.reading = False  # one read at a time: a slow Redis skips refreshes instead of piling them up

    def compose(self) -> ComposeResult:
        yield Static('connecting...', id='status')
        yield DataTable(id='table', cursor_type='row', zebra_stripes=True)
        yield Input(placeholder='filter by name; Enter keeps it, Escape clears it', id='filter')
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for i, title in enumerate(COLUMNS):
            table.add_column(title if i <= _NAME else Text(title, justify='right'), key=title)
        self.read()
        self.set_interval(self.interval, self.read)

    def read(self) -> None:
        if not self.reading:
            self.reading = True
            self.run_worker(self._read(), group='read')

    async def _read(self) -> None:
        # The read runs in a thread, awaited here: an app that quits cancels this task and never waits for a
        # thread that would wait for it (call_from_thread from a worker thread blocks on the closing loop).
        try:
            snapshot, error = await asyncio.to_thread(self.sampler.read), None
        except FerroqError as exc:
            snapshot, error = None, str(exc)
        finally:
            self.reading = False
        self._show(snapshot, error)

    def _show(self, snapshot: Snapshot | None, error: str | None) -> None:
        self.error = error
        if snapshot is not None:
            self.snapshot = snapshot
        self.render_table()

    def render_table(self) -> None:
        table = self.query_one(DataTable)
        status = self.query_one('#status', Static)
        order = f'{COLUMNS[self.sort_column]} {"desc" if self.reverse else "asc"}'
        where = f'filter {self.match!r}  ' if self.match else ''
        if self.snapshot is None:
            status.update(f'{self.sampler.url}  {self.error or "reading..."}')
            return
        table_rows = rows(self.snapshot, match=self.match, sort=self.sort_column, reverse=self.reverse)
        stamp = time.strftime('%H:%M:%S', time.localtime(self.snapshot.taken))
        problem = f'  error: {self.error}' if self.error else ''
        status.update(
            f'{self.sampler.url}  {stamp}  {len(self.snapshot.queues)} queues  sort {order}  {where}'
            f'every {self.interval:g}s{problem}'
        )
        cursor = table.cursor_row
        table.clear()
        for cells in table_rows:
            table.add_row(*cells[: _NAME + 1], *(Text(cell, justify='right') for cell in cells[_NAME + 1 :]))
        if table_rows:
            table.move_cursor(row=min(cursor, len(table_rows) - 1))

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        if event.column_index == self.sort_column:
            self.reverse = not self.reverse
        else:
            self.sort_column, self.reverse = event.column_index, False
        self.render_table()

    def action_sort(self) -> None:
        self.sort_column = (self.sort_column + 1) % len(COLUMNS)
        self.render_table()

    def action_reverse(self) -> None:
        self.reverse = not self.reverse
        self.render_table()

    def action_filter(self) -> None:
        box = self.query_one('#filter', Input)
        box.add_class('active')
        box.value = self.match
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.match = event.value
        self.render_table()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.input.remove_class('active')
        self.query_one(DataTable).focus()

    def action_clear_filter(self) -> None:
        box = self.query_one('#filter', Input)
        box.value = ''
        box.remove_class('active')
        self.match = ''
        self.query_one(DataTable).focus()
        self.render_table()
