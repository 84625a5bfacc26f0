"""Fixtures of the interop tests: rfq 1.4.0 from PyPI in its own venv (.venv-rfq, with the redis-py 3.5 it pins).

A missing .venv-rfq fails these tests: `make setup` creates it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from _redis import RedisServer

DRIVER = Path(__file__).resolve().parent / 'rfq_driver.py'
RFQ_VENV = Path(os.environ.get('FERROQ_RFQ_VENV', Path(__file__).resolve().parents[2] / '.venv-rfq'))


@pytest.fixture(scope='module')
def rfq_python() -> Path:
    python = RFQ_VENV / 'bin' / 'python'
    if not python.exists():
        pytest.fail(f'{python} is missing: run `make setup` (it creates .venv-rfq with rfq==1.4.0)', pytrace=False)
    out = subprocess.run(
        [str(python), '-c', 'import importlib.metadata as m; print(m.version("rfq"), m.version("redis"))'],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[0] == '1.4.0', out.stdout
    return python


@pytest.fixture
def rfq_env(redis_server: RedisServer) -> dict[str, str]:
    """The environment rfq reads: RFQ_REDIS_HOST/PORT of the test server."""
    return {**os.environ, 'RFQ_REDIS_HOST': '127.0.0.1', 'RFQ_REDIS_PORT': str(redis_server.port)}


def _output(argv: list[str], env: dict[str, str]) -> str:
    out = subprocess.run(argv, capture_output=True, text=True, timeout=30, env=env, check=False)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.fixture
def rfq(rfq_python, rfq_env, redis_url):
    """Runs rfq driver commands (one or a list) against the test server; returns the list of results."""

    def run(*cmds: dict[str, Any]) -> list[Any]:
        return json.loads(_output([str(rfq_python), str(DRIVER), json.dumps(list(cmds))], rfq_env))

    return run


@pytest.fixture
def rfq_cli(rfq_python, rfq_env, redis_url):
    """rfq's own command line (``rfq list-topics`` ...); returns its output lines."""

    def run(*args: str) -> list[str]:
        return _output([str(rfq_python.parent / 'rfq'), *args], rfq_env).splitlines()

    return run
