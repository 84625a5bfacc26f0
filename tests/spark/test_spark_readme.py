"""The README's Spark example pipeline runs as written (against the test server and session)."""

from __future__ import annotations

import os
import runpy
from pathlib import Path
from typing import Any

import pytest
import redis

README = Path(__file__).resolve().parents[2] / 'README.md'


def _example(marker: str) -> str:
    text = README.read_text()
    after = text.split(f'<!-- example: {marker} -->\n', 1)[1]
    assert after.startswith('```python\n')
    return after[len('```python\n') :].split('\n```\n', 1)[0]


def test_the_spark_pipeline_example_runs(
    spark: Any,
    redis_url: str,
    r: redis.Redis,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv('FERROQ_URL', redis_url)
    script = tmp_path / 'spark_pipeline.py'
    script.write_text(_example('spark-pipeline'))
    runpy.run_path(str(script), run_name='__main__')
    assert capsys.readouterr().out.startswith("10000 ['tile', 'day', 'cloud', '_id', '_published'")
    # Every message was consumed; the last micro-batch (10000 - 2 * 4000) waits for Spark's next commit.
    assert (r.llen('rfq:tiles:backlog'), r.llen('rfq:tiles:nextlog')) == (0, 2000)
    assert os.environ['FERROQ_URL'] == redis_url
