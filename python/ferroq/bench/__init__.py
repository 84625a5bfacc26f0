"""``ferroq bench``: messages/s of every queue operation, per client and peer library, next to the server ceiling.

The matrix is operations × implementations × batch sizes (``_registry``, filled by ``_impls``): ferroq's
native and pure clients (sync and asyncio), a raw redis-py pipeline of each protocol's own commands,
PyRSMQ, and rfq 1.4.0 in its own venv. Each operation is compared with the ceiling of its exact command
stream through ``redis-cli --pipe`` (``_ceiling``) and with the best pure-Python row; ``_extra`` adds
latency percentiles, claim+commit against queue depth and the memory of publishing from a generator;
``_render`` turns the JSON document into tables, the README block and a PNG chart.
"""

from __future__ import annotations

from ferroq.bench._common import BenchError, Config, Row
from ferroq.bench._main import JSON_SCHEMA, build_parser, config_from_args, finish, main, plan, run
from ferroq.bench._registry import IMPLS, OPERATIONS, Impl, Operation, register, register_operation
from ferroq.bench._render import TARGETS, evaluate_targets, plot, render_console, render_markdown, update_readme

__all__ = [
    'IMPLS',
    'JSON_SCHEMA',
    'OPERATIONS',
    'TARGETS',
    'BenchError',
    'Config',
    'Impl',
    'Operation',
    'Row',
    'build_parser',
    'config_from_args',
    'evaluate_targets',
    'finish',
    'main',
    'plan',
    'plot',
    'register',
    'register_operation',
    'render_console',
    'render_markdown',
    'run',
    'update_readme',
]
