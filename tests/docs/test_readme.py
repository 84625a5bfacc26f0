"""README.md runs as written.

How README.md's code blocks are treated (follow this when you add or change a section):

- Every fenced block tagged ``python``, ``sh``, ``bash`` or ``shell`` is an example, and this module runs it:
  **twice in a row**, in a new temporary directory, against a throwaway ``redis-server`` on loopback whose
  URL is in ``FERROQ_URL`` (so ``ferroq.Client()`` and the ``ferroq`` command find it). The database is
  flushed before each block, not between its two runs, so an example must cope with what its first run
  left (create with ``exist_ok``, check before creating, or clean up at its end). A Python block runs as a
  script in a new interpreter; a shell block runs with ``bash -eu -o pipefail`` and this venv's ``ferroq``
  first on ``PATH``. Each run must exit with status 0 within 120 s.
- So an example defines everything it calls, uses small numbers (it runs in CI) and prints what it does.
- A block that is not meant to run as written (an install or ``make`` command, a sketch that needs your
  data) is marked by an HTML comment on the line right above its opening fence, with the reason:
  ``<!-- fragment: installs the package -->``.
- A block that another test runs (one that needs Spark, say) is marked
  ``<!-- tested-by: tests/spark/test_spark_readme.py -->``, together with an ``<!-- example: NAME -->``
  marker that the named test module uses to find the block; this module checks that both are there.
- Plain fences (no language) are text: synopses, trees, sample output. They are never run.

Also checked here: every ``ferroq`` verb is documented in the "Command line" section, and the performance
table says which ``make bench`` arguments made it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / 'README.md'
RUN_TIMEOUT = 120
LANGUAGES = {'python': 'python', 'sh': 'shell', 'bash': 'shell', 'shell': 'shell'}
MARKER = re.compile(r'<!--\s*(fragment|tested-by|example):\s*(.*?)\s*-->')


@dataclass
class Block:
    line: int  # of the opening fence, 1-based
    section: str
    kind: str  # 'python' or 'shell'
    code: str
    markers: dict[str, str]

    @property
    def name(self) -> str:
        slug = re.sub(r'[^a-z0-9]+', '-', self.section.lower()).strip('-')
        return f'{slug}-line{self.line}'


def _blocks(text: str) -> list[Block]:
    """Every Python and shell block, with the markers on the comment lines right above it."""
    lines = text.splitlines()
    blocks: list[Block] = []
    section, i = '', 0
    while i < len(lines):
        line = lines[i]
        if line.startswith('#'):
            section = line.lstrip('#').strip()
        fence = re.fullmatch(r'```(\S*)\s*', line)
        if not fence:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith('```'))
        kind = LANGUAGES.get(fence.group(1))
        if kind is not None:
            markers, k = {}, i - 1
            while k >= 0 and MARKER.fullmatch(lines[k].strip()):
                match = MARKER.fullmatch(lines[k].strip())
                assert match is not None
                markers[match.group(1)] = match.group(2)
                k -= 1
            blocks.append(Block(i + 1, section, kind, '\n'.join(lines[i + 1 : end]) + '\n', markers))
        i = end + 1
    return blocks


BLOCKS = _blocks(README.read_text())
RUNNABLE = [b for b in BLOCKS if not ({'fragment', 'tested-by'} & b.markers.keys())]


def _run(block: Block, url: str, where: Path) -> subprocess.CompletedProcess[str]:
    if block.kind == 'python':
        script = where / 'example.py'
        argv = [sys.executable, str(script)]
    else:
        script = where / 'example.sh'
        argv = ['bash', '-eu', '-o', 'pipefail', str(script)]
    script.write_text(block.code)
    env = {**os.environ, 'FERROQ_URL': url, 'PATH': f'{Path(sys.executable).parent}{os.pathsep}{os.environ["PATH"]}'}
    return subprocess.run(
        argv,
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        stdin=subprocess.DEVNULL,
        check=False,
    )


@pytest.mark.parametrize('block', RUNNABLE, ids=[b.name for b in RUNNABLE])
def test_example_runs_twice(block: Block, redis_url: str, tmp_path: Path) -> None:
    for attempt in (1, 2):
        where = tmp_path / f'run{attempt}'
        where.mkdir()
        out = _run(block, redis_url, where)
        assert out.returncode == 0, f'README.md line {block.line}, run {attempt}:\n{out.stdout}\n{out.stderr}'
        if block.section == 'Quick start':
            assert out.stdout.strip(), 'the quick start prints what it does'


def test_blocks_are_found_and_mostly_run() -> None:
    assert len(RUNNABLE) >= 8, [b.name for b in BLOCKS]
    assert any(b.section == 'Quick start' and b.kind == 'python' for b in RUNNABLE)


@pytest.mark.parametrize('block', [b for b in BLOCKS if b.markers.keys() - {'example'}], ids=lambda b: b.name)
def test_markers_are_complete(block: Block) -> None:
    if 'fragment' in block.markers:
        assert block.markers['fragment'], f'line {block.line}: a fragment says why it does not run'
    if 'tested-by' in block.markers:
        test = ROOT / block.markers['tested-by']
        assert test.is_file(), f'line {block.line}: {test} does not exist'
        name = block.markers.get('example')
        assert name, f'line {block.line}: a tested-by block also needs <!-- example: NAME -->'
        assert name in test.read_text(), f'{test} does not use the example {name!r}'


def _section(title: str) -> str:
    text = README.read_text()
    start = text.index(f'\n## {title}\n')
    end = text.find('\n## ', start + 1)
    return text[start : end if end > 0 else len(text)]


def test_every_verb_is_documented() -> None:
    import argparse

    from ferroq import cli

    documented = _section('Command line')
    parser = cli._parser()
    [verbs] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    missing = []
    for name, sub in verbs.choices.items():
        if f'ferroq {name}' not in documented:
            missing.append(name)
        for action in sub._actions:
            if isinstance(action, argparse._SubParsersAction):  # rsmq and stream actions
                missing += [f'{name} {a}' for a in action.choices if not re.search(rf'\b{re.escape(a)}\b', documented)]
    assert not missing, f'verbs missing from the "Command line" section of README.md: {missing}'


def test_bench_table_says_how_it_was_made() -> None:
    """The README's tables come from a plain `make bench` (no BENCH_ARGS): its default settings are the ones in
    the table's caption."""
    from ferroq.bench import _main

    performance = _section('Performance')
    assert 'made by a plain `make bench`' in performance, 'the Performance section says a plain `make bench` made it'
    assert 'BENCH_ARGS=' not in performance.split('<!-- perf-table:start -->')[0].split('The tables below')[-1]
    cfg = _main.config_from_args(_main.build_parser().parse_args([]), 'redis://127.0.0.1:1/0')
    caption = re.search(
        r'(\d+)-byte messages; up to ([\d,]+) per measurement at batch 1000 .*?; (\d+) asyncio tasks .*?; '
        r'median of (\d+)\.',
        performance,
    )
    assert caption, 'the table caption is missing'
    size, messages, tasks, repeat = (int(g.replace(',', '')) for g in caption.groups())
    assert (cfg.size, cfg.messages, cfg.concurrency, cfg.repeat) == (size, messages, tasks, repeat)
