"""The benchmark's own code: arguments, the matrix plan, ceiling streams, ratios and targets, rendering, JSON.

These assert what the benchmark does, never how fast anything is: the runs use a few hundred messages
against the test server.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ferroq.bench import (
    IMPLS,
    JSON_SCHEMA,
    OPERATIONS,
    BenchError,
    Config,
    build_parser,
    config_from_args,
    evaluate_targets,
    finish,
    main,
    plan,
    render_console,
    render_markdown,
    run,
    update_readme,
)
from ferroq.bench._ceiling import (
    ferroq_claim_commit_stream,
    ferroq_publish_stream,
    resp,
    rfq_claim_commit_stream,
    rfq_publish_stream,
    rsmq_receive_delete_stream,
    rsmq_send_stream,
    tool_target,
    xadd_stream,
    xread_ack_stream,
)
from ferroq.bench._common import Admin, Progress
from ferroq.bench._extra import percentile, rss_verdict
from ferroq.bench._paired import SLICES, measure_pairs, pair_plans
from ferroq.bench._wire import RSMQ_RECEIVE, rfq_ids, rsmq_ids

RFQ_PYTHON = Path(os.environ.get('FERROQ_RFQ_VENV', Path(__file__).parents[2] / '.venv-rfq')) / 'bin' / 'python'


def tiny(url: str, **kw: Any) -> Config:
    """A run of a few hundred messages: enough to exercise every path, too small to mean anything as a figure."""
    base: dict[str, Any] = {
        'url': url,
        'messages': 200,
        'batches': (1, 10),
        'impls': ('native', 'native-async', 'pure', 'redis-py', 'redis-py+lua'),
        'ops': ('publish', 'claim', 'claim+commit', 'rsmq send', 'stream read+ack'),
        'quick': True,
        'latency_calls': 20,
        'ceiling_messages': 300,
        'rss_messages': 300,
        'scale': False,
        'spark_rows': 0,  # the Spark section has its own test (tests/spark/test_spark_bench.py)
    }
    return Config(**{**base, **kw})


# --- arguments and the plan ----------------------------------------------------------------------------------


def test_parser_defaults_and_quick() -> None:
    cfg = config_from_args(build_parser().parse_args([]), 'redis://x')
    assert (cfg.messages, cfg.batches, cfg.size, cfg.repeat) == (100_000, (1, 100, 1000), 100, 1)
    assert cfg.ceiling and cfg.latency and cfg.scale and cfg.rss_messages == 1_000_000
    quick = config_from_args(build_parser().parse_args(['--quick']), 'redis://x')
    assert quick.quick and quick.messages < cfg.messages and quick.ceiling_messages < cfg.ceiling_messages
    assert quick.rss_messages < cfg.rss_messages
    assert config_from_args(build_parser().parse_args(['--scale']), 'u').rss_messages == 10_000_000
    assert (cfg.noise_retries, quick.noise_retries) == (2, 0)
    assert config_from_args(build_parser().parse_args(['--quick', '--noise-retries', '1']), 'u').noise_retries == 1
    assert (cfg.target_pairs, quick.target_pairs) == (5, 1)
    assert config_from_args(build_parser().parse_args(['--target-pairs', '0']), 'u').target_pairs == 0
    off = config_from_args(build_parser().parse_args(['--rss-messages', '0', '--no-ceiling', '--no-scale']), 'u')
    assert (off.rss_messages, off.ceiling, off.scale) == (0, False, False)
    assert (cfg.spark_rows, quick.spark_rows) == (1_000_000, 100_000)
    assert config_from_args(build_parser().parse_args(['--quick', '--spark-rows', '0']), 'u').spark_rows == 0


@pytest.mark.parametrize(
    'argv',
    [['--impl', 'nope'], ['--op', 'fly'], ['--batch', '0'], ['--batch', 'x'], ['--batch', '20000'], ['--repeat', '0']],
)
def test_parser_rejects_bad_values(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(argv)
    assert exc.value.code == 2
    assert 'ferroq bench' in capsys.readouterr().err


def test_parser_lists() -> None:
    args = build_parser().parse_args(['--impl', 'native,pure', '--op', 'publish', '--batch', '1000,1,1'])
    assert (args.impl, args.op, args.batch) == (('native', 'pure'), ('publish',), (1, 1000))


def test_messages_per_measurement_shrink_with_batch_and_cap() -> None:
    cfg = Config(url='u', messages=100_000)
    assert [cfg.messages_for(b) for b in (1, 100, 1000)] == [5_000, 50_000, 100_000]
    assert cfg.messages_for(1, cap=3000) == 3000
    assert Config(url='u', messages=100_000, quick=True).messages_for(1, cap=3000) == 300
    assert cfg.messages_for(1000, cap=10) == 1000  # never less than one batch
    assert Config(url='u', messages=2500).messages_for(1000) == 2000  # whole batches only


def test_registry_has_the_matrix() -> None:
    assert {
        'publish',
        'claim+commit',
        'rsmq send',
        'rsmq receive+delete',
        'stream publish',
        'stream read+ack',
        'worker',
    } <= set(OPERATIONS)
    assert {'native', 'native-async', 'pure', 'pure-async', 'redis-py', 'pyrsmq', 'rfq'} <= set(IMPLS)
    for name, op in OPERATIONS.items():
        assert op.family in ('rfq', 'rsmq', 'stream'), name
    assert not IMPLS['native'].pure_python and IMPLS['pure'].pure_python and IMPLS['rfq'].pure_python
    assert IMPLS['rfq'].supports('claim+commit', 1) and not IMPLS['rfq'].supports('claim+commit', 1000)
    for impl in ('native', 'native-async', 'pure', 'pure-async'):  # ferroq's RSMQ queues, streams and workers
        assert all(
            IMPLS[impl].supports(op, b)
            for op in ('rsmq send', 'rsmq receive+delete', 'stream publish', 'stream read+ack', 'worker')
            for b in (1, 1000)
        )
    assert OPERATIONS['worker'].drains and not OPERATIONS['claim+commit'].drains


def test_plan_filters_and_reports_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # No rfq interpreter anywhere: not the one given, not from the environment, not ./.venv-rfq.
    monkeypatch.delenv('FERROQ_BENCH_RFQ_PYTHON', raising=False)
    monkeypatch.chdir(tmp_path)
    cfg = Config(url='u', batches=(1, 1000), impls=('native', 'rfq'), ops=('publish',), rfq_python=str(tmp_path / 'x'))
    cells, unavailable = plan(cfg)
    assert [(op, b, i.name) for op, b, i in cells] == [('publish', 1, 'native'), ('publish', 1000, 'native')]
    assert unavailable.get('rfq')


# --- ceiling streams ------------------------------------------------------------------------------------------


def test_resp_encoding() -> None:
    assert resp('SET', 'k', 1) == b'*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\n1\r\n'
    assert resp('X', 'é') == b'*2\r\n$1\r\nX\r\n$2\r\n\xc3\xa9\r\n'


def test_rsmq_ids_sort_in_send_order() -> None:
    ids = rsmq_ids(50, start_us=1_700_000_000_000_000)
    assert all(len(i) == 32 for i in ids)
    assert ids == sorted(ids)


def test_tool_target() -> None:
    assert tool_target('redis://127.0.0.1:7000/0', 'redis-cli') == ['-h', '127.0.0.1', '-p', '7000']
    assert tool_target('redis://:pw@h:1/3', 'redis-cli') == [
        '-h',
        'h',
        '-p',
        '1',
        '-a',
        'pw',
        '--no-auth-warning',
        '-n',
        '3',
    ]
    assert tool_target('redis://u:pw@h:1/3', 'redis-benchmark')[-4:] == ['--user', 'u', '--dbnum', '3']
    assert tool_target('unix:///tmp/r.sock?db=2', 'redis-cli') == ['-s', '/tmp/r.sock', '-n', '2']
    with pytest.raises(BenchError):
        tool_target('rediss://h:1', 'redis-cli')


def _pipe(url: str, stream: bytes) -> str:
    cli = shutil.which('redis-cli')
    assert cli, 'redis-cli is part of redis-tools, installed with redis-server'
    proc = subprocess.run(
        [cli, *tool_target(url, 'redis-cli'), '--pipe'], input=stream, capture_output=True, timeout=30, check=False
    )
    out = proc.stdout.decode()
    assert proc.returncode == 0 and 'errors: 0' in out, out
    return out


def test_rfq_streams_publish_then_drain_everything(redis_url: str, r: Any) -> None:
    ids = rfq_ids(250)
    _pipe(redis_url, rfq_publish_stream('t', ids, 'x' * 100))
    assert r.llen('rfq:t:backlog') == 250 and r.hgetall(f'rfq:t:message:{ids[0]}') == {'payload': 'x' * 100}
    assert r.lindex('rfq:t:backlog', -1) == ids[0]  # oldest at the tail, where LMOVE takes it
    out = _pipe(redis_url, rfq_claim_commit_stream('t', ids, batch=100))
    assert 'replies: 1000' in out  # four commands per message
    assert r.dbsize() == 0


def test_ferroq_script_streams_publish_then_drain_everything(redis_url: str, r: Any) -> None:
    from ferroq.protocol import script_source

    claim, commit = (r.script_load(script_source(f'rfq/{s}')) for s in ('claim-8n', 'commit-6n'))
    ids = rfq_ids(250)
    out = _pipe(redis_url, ferroq_publish_stream('t', ids, 'x' * 100, batch=100))
    assert 'replies: 271' in out  # 250 messages + per chunk WATCH, GET, MULTI, LPUSH, SET, EXEC, DEL
    assert r.lrange('rfq:t:backlog', 0, -1) == ids[::-1] and r.hgetall(f'rfq:t:message:{ids[7]}') == {
        'payload': 'x' * 100
    }
    _pipe(redis_url, ferroq_claim_commit_stream('t', ids, claim, commit, batch=100))
    assert r.dbsize() == 0  # every claim was committed with its token: no message, claim or in-flight id is left


def test_rsmq_streams_send_then_receive_and_delete_everything(redis_url: str, r: Any) -> None:
    ids = rsmq_ids(120)
    _pipe(redis_url, rsmq_send_stream('q', ids, 'b' * 100, 1_000))
    assert r.zcard('rsmq:q') == 120 and r.hget('rsmq:q:Q', 'totalsent') == '120'
    sha = r.script_load(RSMQ_RECEIVE)
    _pipe(redis_url, rsmq_receive_delete_stream('q', ids, sha, 1_000))
    assert r.zcard('rsmq:q') == 0
    assert r.hgetall('rsmq:q:Q') == {'totalsent': '120', 'totalrecv': '120'}  # every body, :rc and :fr deleted


def test_stream_streams_add_then_read_and_ack_everything(redis_url: str, r: Any) -> None:
    _pipe(redis_url, xadd_stream('s', 250, 'p'))
    r.xgroup_create('s', 'g', id='0')
    _pipe(redis_url, xread_ack_stream('s', 250, batch=100))
    assert r.xlen('s') == 250 and r.xpending('s', 'g')['pending'] == 0
    assert r.xinfo_groups('s')[0]['last-delivered-id'] == '250-1'


# --- ratios, targets and rendering ----------------------------------------------------------------------------


def _row(op: str, batch: int, impl: str, rate: float, pure: bool, **kw: Any) -> dict[str, Any]:
    return {
        'operation': op,
        'batch': batch,
        'impl': impl,
        'msgs_per_s': rate,
        'pure_python': pure,
        'note': '',
        'messages': 1000,
        'partial': False,
        **kw,
    }


def synthetic() -> dict[str, Any]:
    return {
        'schema': JSON_SCHEMA,
        'started_at': '2026-11-23T12:00:00+00:00',
        'machine': {
            'ferroq_version': '0',
            'redis_version': '7',
            'python_version': '3',
            'cpu_count': 2,
            'cpu_model': 'cpu',
            'platform': 'linux',
        },
        'params': {'size': 100, 'messages': 1000, 'concurrency': 4, 'repeat': 1},
        'rows': [
            _row('publish', 1000, 'native', 200_000, False, bg_cores=0.05),
            _row('publish', 1000, 'pure', 40_000, True),
            _row('publish', 1000, 'redis-py', 50_000, True),
            _row('publish', 1000, 'rfq', 20_000, True),
            _row('publish', 1, 'native', 9_000, False),
            _row('claim', 1, 'native', 4_000, False),
            _row('claim', 1, 'native-async', 5_000, False),
            _row('claim+commit', 1000, 'native', 10_000, False),
            _row('claim+commit', 1, 'rfq', 1_000, True),
            _row('claim+commit', 1000, 'pure', 0, True, note='failed: boom'),
            _row('rsmq send', 1000, 'native', 100_000, False),
            _row('rsmq send', 1, 'pyrsmq', 2_000, True),
            _row('rsmq receive+delete', 1000, 'native-async', 60_000, False),
            _row('rsmq receive+delete', 1, 'pyrsmq', 1_600, True),
            _row('worker', 1, 'native', 5_000, False),
            _row('worker', 1000, 'native-async', 25_420, False),
            _row('worker', 1000, 'pure', 8_000, True),
        ],
        'ceilings': {
            'rsmq receive+delete': {'msgs_per_s': 40_000, 'commands': 'EVALSHA receive + ZREM/HDEL'},
            'rfq publish': {'msgs_per_s': 220_000, 'commands': 'HSET + LPUSH', 'server_us_per_msg': 4.5},
            'rfq claim+commit': {'reason': 'redis-cli not found'},
            'round trip': {'msgs_per_s': 10_000, 'command': 'redis-benchmark -P 1'},
            'publish script per round trip': {'msgs_per_s': 9_800, 'command': 'redis-benchmark -P 1 EVALSHA'},
            'publish script per round trip (redis-rs)': {'msgs_per_s': 9_500, 'command': 'redis-rs EVALSHA'},
            'claim script and body read per round trip (redis-rs)': {'msgs_per_s': 6_000, 'command': 'redis-rs'},
        },
        'latency': [
            {'operation': 'publish', 'impl': 'native', 'calls': 10, 'p50_us': 50.0, 'p99_us': 90.0, 'max_us': 99.0}
        ],
        'scale': {
            'impl': 'native',
            'batch': 100,
            'messages': 10,
            'ratio': 0.95,
            'rounds': 10,
            'depths': {
                '1000': {'msgs_per_s': 100.0, 'server_us_per_msg': 20.0},
                '100000': {'msgs_per_s': 95.0, 'server_us_per_msg': 21.5},
            },
        },
        'rss': {
            'impl': 'native',
            'messages': 1000,
            'base_mib': 30.0,
            'peak_mib': 40.0,
            'bytes_per_msg': 10485.0,
            'bounded': True,
            'msgs_per_s': 1000.0,
        },
    }


def test_ratios_and_targets() -> None:
    data = synthetic()
    finish(data)
    rows = {(r['operation'], r['batch'], r['impl']): r for r in data['rows']}
    native = rows['publish', 1000, 'native']
    assert native['ceiling_key'] == 'rfq publish' and native['ratio_ceiling'] == pytest.approx(200 / 220)
    assert native['best_pure_impl'] == 'redis-py' and native['ratio_best_pure'] == pytest.approx(4.0)
    assert rows['publish', 1, 'native']['ceiling_key'] == 'round trip'
    assert 'ceiling_key' not in rows['claim+commit', 1000, 'native']  # its ceiling was not measured
    targets = {t['target']: t for t in data['targets']}
    assert targets['publish_batch(1000) vs the ceiling of HSET + one LPUSH per 1000']['met'] is True
    assert targets['publish_batch(1000) vs the best pure-Python client']['met'] is True  # 4×, goal 2.5×
    assert targets['publish_batch(1000) vs rfq 1.4.0 publish_batch(1000)']['met'] is True
    assert targets['claim+commit(1000) vs rfq 1.4.0 consume+done']['met'] is False  # 10×, goal 50×
    # the matrix's batch-1 column is against the round trip; the target against the same script call per round trip
    assert rows['publish', 1, 'native']['ratio_ceiling'] == pytest.approx(0.9)
    single = targets['single publish vs its script call per redis-rs round trip']
    assert single['ratio'] == pytest.approx(9_000 / 9_500) and single['met'] is True  # goal 0.9
    assert single['against'] == 'ceiling (publish script per round trip (redis-rs))'
    # the sync client's row, though the asyncio one (4 tasks, overlapping calls) is faster
    claim = targets['single claim vs its calls per redis-rs round trip']
    assert claim['impl'] == 'native' and claim['ratio'] == pytest.approx(4 / 6) and claim['met'] is False
    assert claim['against'] == 'ceiling (claim script and body read per round trip (redis-rs))'
    assert targets['publish_batch(1000) vs BullMQ addBulk(1000)']['ratio'] == pytest.approx(200_000 / 11_840)
    cc = targets['claim+commit(1000) vs the ceiling of LMOVE/HGETALL/LREM/DEL']
    assert cc['met'] is None and cc['reason']
    worker = targets['worker (no-op handler) vs BullMQ Worker']  # the best native worker row, any batch
    assert worker['against'] == 'bullmq worker (reference figure)' and worker['impl'] == 'native-async'
    assert worker['ratio'] == pytest.approx(20.0) and worker['met'] is True
    rq = targets['worker (no-op handler) vs RQ SimpleWorker (burst)']
    assert rq['ratio'] == pytest.approx(25_420 / 268) and rq['met'] is True
    send = targets['RSMQ send(1000) vs PyRSMQ sendMessage']
    assert send['against'] == 'pyrsmq rsmq send(1)' and send['ratio'] == pytest.approx(50.0) and send['met'] is True
    recv = targets['RSMQ receive+delete(1000) vs PyRSMQ']
    assert recv['ratio'] == pytest.approx(37.5) and recv['met'] is False
    ceiling = targets['RSMQ receive+delete(1000) vs the ceiling of RSMQ per-message commands']
    assert (
        ceiling['impl'] == 'native-async' and ceiling['ratio'] == pytest.approx(1.5) and ceiling['met'] is False
    )  # goal 2×
    assert len(evaluate_targets(data)) == len(data['targets'])


def test_paired_ratios_replace_the_matrix_ones() -> None:
    data = synthetic()
    label = 'publish_batch(1000) vs the ceiling of HSET + one LPUSH per 1000'
    # three pairs timed back to back: the target's ratio is the median pair, not the matrix's 200k / 220k
    data['paired'] = {
        label: {
            'native_impl': 'native',
            'native': [150_000.0, 170_000.0, 160_000.0],
            'against': [200_000.0, 170_000.0, 180_000.0],
            'ratios': [0.75, 1.0, 160 / 180],
            'ratio': 160 / 180,
        }
    }
    finish(data)
    t = {t['target']: t for t in data['targets']}[label]
    assert t['ratio'] == pytest.approx(160 / 180) and t['matrix_ratio'] == pytest.approx(200 / 220)
    assert t['msgs_per_s'] == 160_000 and t['of'] == 180_000 and t['met'] is True
    assert '| 0.89× | 0.75 1.00 0.89 | ≥ 0.85× | yes |' in render_markdown(data)


def test_targets_timed_with_the_aof_switched_get_their_own_table() -> None:
    data = synthetic()
    label = 'publish_batch(1000) vs the ceiling of HSET + one LPUSH per 1000'
    data['paired_switched'] = {
        'persistence': 'no AOF',
        'pairs': {
            label: {
                'native_impl': 'native',
                'native': [230_000.0, 250_000.0, 240_000.0],
                'against': [300_000.0, 300_000.0, 300_000.0],
                'ratios': [230 / 300, 250 / 300, 0.8],
                'ratio': 0.8,
            }
        },
    }
    finish(data)
    targets = {t['target']: t for t in data['targets']}
    switched = targets[label]['switched']
    assert switched['persistence'] == 'no AOF' and switched['ratio'] == pytest.approx(0.8)
    assert switched['met'] is False and switched['msgs_per_s'] == 240_000 and switched['of'] == 300_000
    assert targets[label]['met'] is True  # the matrix's ratio, as the server is, stays apart: 200k / 220k
    # a target about ferroq's own costs not paired in this run says so; a peer's target has no such entry
    single = targets['single claim vs its calls per redis-rs round trip']['switched']
    assert single['met'] is None and single['reason'] == 'not measured in this run'
    assert 'switched' not in targets['publish_batch(1000) vs rfq 1.4.0 publish_batch(1000)']
    # a second targets table: the switched pairs' figures, only the targets timed both ways
    md = render_markdown(data)
    switched_table = md[md.index('| target, no AOF | native | against | ratio | per pair | goal | met |') :]
    switched_table = switched_table[: switched_table.index('\n\n')]
    assert (
        f'| {label} | native 240,000 | ceiling (rfq publish) 300,000 | 0.80× | 0.77 0.83 0.80 | ≥ 0.85× | NO |'
        in switched_table
    )
    assert 'rfq 1.4.0' not in switched_table and 'not measured in this run' in switched_table
    assert f'| {label} | native 200,000 | ceiling (rfq publish) 220,000 | 0.91× |' in md  # as the server is
    assert 'target, no AOF' in render_console(data)
    # the AOF could not be switched: every such target says why
    data['paired_switched'] = {'reason': 'not timed with the AOF switched: CONFIG is renamed'}
    finish(data)
    targets = {t['target']: t for t in data['targets']}
    assert targets[label]['switched'] == {
        'ratio': None,
        'met': None,
        'reason': 'not timed with the AOF switched: CONFIG is renamed',
    }
    assert '| target, AOF switched | native | against |' in render_markdown(data)
    assert 'n/a: not timed with the AOF switched: CONFIG is renamed' in render_markdown(data)


def test_pair_plans_name_each_comparator() -> None:
    data = synthetic()
    finish(data)
    plans = {t.label: (natives, comparators) for t, natives, comparators in pair_plans(data)}
    assert plans['publish_batch(1000) vs the ceiling of HSET + one LPUSH per 1000'] == (
        ('native',),
        (('ceiling', 'rfq publish'),),
    )
    # the two fastest pure-Python rows of the matrix, the faster first
    assert plans['publish_batch(1000) vs the best pure-Python client'] == (
        ('native',),
        (('cell', 'redis-py', 'publish', '1000'), ('cell', 'pure', 'publish', '1000')),
    )
    # a single call's targets are about the sync client: the asyncio one's row is not timed
    assert plans['single publish vs its script call per redis-rs round trip'] == (
        ('native',),
        (('ceiling', 'publish script per round trip (redis-rs)'),),
    )
    assert plans['single claim vs its calls per redis-rs round trip'] == (
        ('native',),
        (('ceiling', 'claim script and body read per round trip (redis-rs)'),),
    )
    assert plans['RSMQ send(1000) vs PyRSMQ sendMessage'] == (('native',), (('cell', 'pyrsmq', 'rsmq send', '1'),))
    # a reference figure has nothing to pair with; a ceiling not measured in the run neither
    assert 'worker (no-op handler) vs BullMQ Worker' not in plans
    assert 'claim+commit(1000) vs the ceiling of LMOVE/HGETALL/LREM/DEL' not in plans
    # with the AOF switched, only the targets about ferroq's own costs are paired again
    switched = {t.label for t, _, _ in pair_plans(data, switched=True)}
    assert switched == {label for label in plans if 'rfq 1.4.0' not in label and 'PyRSMQ' not in label}
    assert 'single publish vs its script call per redis-rs round trip' in switched


class _Recorded(Progress):
    """A quiet progress bar that keeps the label of every measurement begun."""

    def __init__(self) -> None:
        super().__init__(1, quiet=True)
        self.labels: list[str] = []

    def begin(self, label: str, target: int) -> None:
        self.labels.append(label)
        super().begin(label, target)


def test_a_single_call_pair_interleaves_short_runs_of_both_sides(redis_url: str, r: Any) -> None:
    cfg = tiny(redis_url, messages=2000, target_pairs=2)
    label = 'single publish vs its script call per redis-rs round trip'
    key = 'publish script per round trip (redis-rs)'
    data = {'rows': [_row('publish', 1, 'native', 9_000, False)], 'ceilings': {key: {'msgs_per_s': 10_000.0}}}
    progress = _Recorded()
    calls: list[int | None] = []

    def native(op: str, batch: int, impl: str, tag: str, n: int | None) -> float:
        progress.labels.append('native')
        calls.append(n)
        return 1_000.0 if len(calls) % 2 else 3_000.0  # the slices' times add up: 1,500 calls/s overall

    admin = Admin(redis_url)
    try:
        paired = measure_pairs(cfg, admin, data, native, progress)
    finally:
        admin.close()
    assert set(paired) == {label}
    entry = paired[label]
    assert entry['slices'] == SLICES and entry['native'] == [pytest.approx(1_500.0)] * 2
    assert len(entry['against']) == len(entry['ratios']) == 2 and all(b > 0 for b in entry['against'])
    # each side ran SLICES times per pair, the same number of calls each time, in the order AB BA AB ...
    assert calls == [cfg.messages_for(1) // SLICES] * 2 * SLICES
    sides = ['native' if x == 'native' else 'ceiling' for x in progress.labels]
    assert sides[:4] == ['native', 'ceiling', 'ceiling', 'native'] and len(sides) == 4 * SLICES
    for s in range(2 * SLICES):
        assert sorted(sides[2 * s : 2 * s + 2]) == ['ceiling', 'native']
    assert r.dbsize() == 0


def test_pairs_time_both_native_clients_and_the_two_best_pure_ones_and_keep_the_fastest(redis_url: str) -> None:
    """The matrix's one cell per client does not decide which client stands for ferroq (or for pure Python):
    each pair times every candidate, and each side takes the one fastest over the pairs."""
    cfg = tiny(redis_url, target_pairs=3)
    data = {
        'rows': [
            _row('publish', 1000, 'native', 200_000, False),  # fastest in the matrix, slower in the pairs
            _row('publish', 1000, 'native-async', 190_000, False),
            _row('publish', 1000, 'redis-py+lua', 60_000, True),
            _row('publish', 1000, 'pure', 50_000, True),
            _row('publish', 1000, 'redis-py', 20_000, True),  # third: not timed
        ],
        'ceilings': {},
    }
    speed = {'native': 150_000.0, 'native-async': 300_000.0, 'redis-py+lua': 40_000.0, 'pure': 75_000.0}
    timed: list[tuple[str, str]] = []

    def measure(op: str, batch: int, impl: str, tag: str, n: int | None) -> float:
        timed.append((impl, tag))
        return speed[impl]

    admin = Admin(redis_url)
    try:
        paired = measure_pairs(cfg, admin, data, measure, Progress(1, quiet=True))
    finally:
        admin.close()
    entry = paired['publish_batch(1000) vs the best pure-Python client']
    assert entry['native_impl'] == 'native-async' and entry['native'] == [300_000.0] * 3
    assert entry['against'] == [75_000.0] * 3 and entry['against_label'] == 'best pure-Python (pure)'
    assert entry['ratio'] == pytest.approx(4.0) and entry['ratios'] == [pytest.approx(4.0)] * 3
    assert set(entry['candidates']) == {'native', 'native-async', 'redis-py+lua publish(1000)', 'pure publish(1000)'}
    # every pair times the four sides, in the order of the pair before reversed
    forward = ['native', 'native-async', 'redis-py+lua', 'pure']
    assert [impl for impl, _ in timed] == forward + forward[::-1] + forward
    assert len({tag for _, tag in timed}) == len(timed)  # each run its own keys
    target = {t['target']: t for t in evaluate_targets({**data, 'paired': paired})}[
        'publish_batch(1000) vs the best pure-Python client'
    ]
    assert target['impl'] == 'native-async' and target['against'] == 'best pure-Python (pure)'
    assert target['ratio'] == pytest.approx(4.0)


def test_the_async_worker_target_times_the_async_worker_even_when_the_sync_one_was_faster() -> None:
    data = synthetic()
    data['rows'].append(_row('worker', 1000, 'native', 30_000, False))  # the sync Worker's row, higher
    finish(data)
    label = 'async worker (no-op handler) vs native claim+commit(1000)'
    target = {t['target']: t for t in data['targets']}[label]
    assert target['impl'] == 'native-async' and target['ratio'] == pytest.approx(25_420 / 10_000)
    plans = {t.label: (natives, comparators) for t, natives, comparators in pair_plans(data)}
    assert plans[label] == (('native-async',), (('cell', 'native', 'claim+commit', '1000'),))
    # a target about no implementation in particular takes the best native row: here the sync Worker's
    assert {t['target']: t for t in data['targets']}['worker (no-op handler) vs BullMQ Worker']['impl'] == 'native'


def test_render_markdown_and_console() -> None:
    data = synthetic()
    finish(data)
    md = render_markdown(data)
    assert md.startswith('| operation | batch | impl | msgs/s | vs ceiling | vs best pure |')
    assert '| publish | 1000 | native | 200,000 | 91% | 4.00× |' in md
    assert 'failed: boom' in md and 'not measured: redis-cli not found' in md
    assert '| publish | native | 10 | 50 | 90 | 99 |' in md
    assert 'ratio 0.95: holds' in md and 'bounded' in md
    assert 'in 10 alternating rounds each' in md and '100,000 queued: 95 msgs/s (21.5 server µs/msg)' in md
    console = render_console(data)
    assert 'publish_batch(1000) vs the ceiling of HSET + one LPUSH per 1000' in console and '200,000' in console


def test_update_readme_replaces_only_the_block(tmp_path: Path) -> None:
    data = synthetic()
    finish(data)
    readme = tmp_path / 'README.md'
    readme.write_text('# x\n\nbefore\n<!-- perf-table:start -->\nold table\n<!-- perf-table:end -->\nafter\n')
    update_readme(str(readme), data)
    text = readme.read_text()
    assert text.startswith('# x\n\nbefore\n<!-- perf-table:start -->\n| operation |')
    assert text.endswith('<!-- perf-table:end -->\nafter\n') and 'old table' not in text
    update_readme(str(readme), data)
    assert readme.read_text() == text  # idempotent
    bare = tmp_path / 'bare.md'
    bare.write_text('no markers\n')
    with pytest.raises(BenchError, match='perf-table'):
        update_readme(str(bare), data)


def test_rss_verdict() -> None:
    assert rss_verdict(700.0, 700.0, 1_000_000) is False  # the input is held
    assert rss_verdict(13.0, 680.0, 20_000) is False  # per-message growth is visible early
    assert rss_verdict(890.0, 89.0, 10_000_000) is False  # even small per-message costs add up
    assert rss_verdict(5.0, 5.0, 1_000_000) is True
    assert rss_verdict(2.0, 100.0, 20_000) is None  # too few messages to tell


def test_percentile() -> None:
    values = [float(x) for x in range(1, 101)]
    assert (percentile(values, 0.5), percentile(values, 0.99), percentile(values, 1.0)) == (50.0, 99.0, 100.0)
    assert percentile([7.0], 0.99) == 7.0
    with pytest.raises(ValueError):
        percentile([], 0.5)


# --- whole runs on the test server ---------------------------------------------------------------------------


def test_run_json_document(redis_url: str, r: Any) -> None:
    data = run(tiny(redis_url), quiet=True)
    json.loads(json.dumps(data))  # serialisable as is
    assert data['schema'] == JSON_SCHEMA and data['leftover_keys'] == 0
    assert {'started_at', 'machine', 'params', 'rows', 'ceilings', 'latency', 'rss', 'targets'} <= set(data)
    assert 'url' not in data['params']
    cells = {(row['operation'], row['batch'], row['impl']) for row in data['rows']}
    assert ('publish', 1, 'native') in cells and ('claim+commit', 10, 'pure') in cells
    assert ('claim', 1, 'native-async') in cells and ('claim', 10, 'native') not in cells  # single claims only
    assert ('rsmq send', 10, 'redis-py') in cells and ('stream read+ack', 1, 'redis-py') in cells
    assert ('publish', 10, 'redis-py+lua') in cells and ('claim+commit', 10, 'redis-py+lua') in cells
    assert ('rsmq send', 10, 'native') in cells and ('rsmq send', 1, 'native-async') in cells
    assert ('stream read+ack', 1, 'native') in cells and ('stream read+ack', 10, 'pure') in cells
    for row in data['rows']:
        assert row['note'] == '' and not row['partial'], row
        assert row['messages'] == 10 and row['msgs_per_s'] > 0  # 200 // 20 below batch 100
        assert row['client_us_per_msg'] > 0 and row['server_us_per_msg'] > 0
        assert row['pure_python'] == (not row['impl'].startswith('native'))
    ceilings = data['ceilings']
    for key in (
        'rfq publish',
        'rfq claim+commit',
        'ferroq publish',
        'ferroq claim+commit',
        'rsmq send',
        'rsmq receive+delete',
        'stream read+ack',
    ):
        assert ceilings[key]['messages'] == 300 and ceilings[key]['msgs_per_s'] > 0, key
    assert ceilings['round trip']['msgs_per_s'] > 0
    for key in ('publish script per round trip', 'publish script per round trip (redis-rs)'):
        assert ceilings[key]['msgs_per_s'] > 0 and ceilings[key]['messages'] == 2_000, key  # swept: dbsize checks
    single_claims = ceilings['claim script and body read per round trip (redis-rs)']
    assert single_claims['msgs_per_s'] > 0 and single_claims['messages'] == 1_000  # swept too
    assert ceilings['lpush -P 64']['msgs_per_s'] > 0  # its key is deleted again (see the dbsize checks)
    # The rfq ceilings again with the AOF switched, and the server's setting put back afterwards.
    was = ceilings['rfq publish']['persistence']
    assert was == ('AOF everysec' if r.config_get('appendonly')['appendonly'] == 'yes' else 'no AOF')
    other = 'no AOF' if was.startswith('AOF') else 'AOF everysec'
    for key in ('rfq publish', 'rfq claim+commit', 'ferroq publish', 'ferroq claim+commit'):
        switched = ceilings[f'{key} ({other})']
        assert switched['persistence'] == other and switched['msgs_per_s'] > 0, key
    assert {(e['operation'], e['impl']) for e in data['latency']} == {
        ('publish', 'native'),
        ('claim+commit', 'native'),
        ('publish', 'pure'),
        ('claim+commit', 'pure'),
    }
    assert all(e['p50_us'] <= e['p99_us'] <= e['max_us'] for e in data['latency'])
    assert data['rss']['published'] == 300 and data['rss']['peak_mib'] >= data['rss']['base_mib'] > 0
    assert data['scale'] is None
    assert r.dbsize() == 0  # every measurement deletes what it wrote


def test_run_ferroq_rsmq_and_worker_rows(redis_url: str, r: Any) -> None:
    cfg = tiny(
        redis_url,
        impls=('native', 'native-async', 'pure', 'pure-async'),
        ops=('rsmq send', 'rsmq receive+delete', 'worker'),
        ceiling=False,
        latency=False,
        rss_messages=0,
    )
    data = run(cfg, quiet=True)
    cells = {(row['operation'], row['batch'], row['impl']): row for row in data['rows']}
    assert set(cells) == {
        (op, b, impl)
        for op in ('rsmq send', 'rsmq receive+delete', 'worker')
        for b in (1, 10)
        for impl in ('native', 'native-async', 'pure', 'pure-async')
    }
    for row in data['rows']:
        assert row['note'] == '' and not row['partial'], row
        assert row['messages'] == 10 and row['msgs_per_s'] > 0 and row['client_us_per_msg'] > 0, row
        assert row['pure_python'] == row['impl'].startswith('pure')
    targets = {t['target']: t for t in data['targets']}
    for label in ('worker (no-op handler) vs BullMQ Worker', 'worker (no-op handler) vs RQ SimpleWorker (burst)'):
        assert targets[label]['impl'].startswith('native') and targets[label]['ratio'] > 0
    assert data['leftover_keys'] == 0 and r.dbsize() == 0  # queues and topics deleted, rsmq:QUEUES emptied


def test_run_paired_targets(redis_url: str, r: Any) -> None:
    cfg = tiny(
        redis_url,
        messages=2000,
        impls=('native', 'pure'),
        ops=('publish', 'claim+commit'),
        batches=(1, 1000),
        ceiling=True,
        target_pairs=2,
        latency=False,
        rss_messages=0,
    )
    data = run(cfg, quiet=True)
    paired = data['paired']
    labels = {
        'publish_batch(1000) vs the ceiling of HSET + one LPUSH per 1000',
        'publish_batch(1000) vs the best pure-Python client',
        'claim+commit(1000) vs the ceiling of LMOVE/HGETALL/LREM/DEL',
        'claim+commit(1000) vs the best pure-Python client',
        'single publish vs its script call per redis-rs round trip',
    }
    assert set(paired) == labels
    assert paired['single publish vs its script call per redis-rs round trip']['slices'] == SLICES
    for label in labels:
        entry = paired[label]
        assert len(entry['native']) == len(entry['against']) == len(entry['ratios']) == 2
        assert entry['native_impl'] == 'native' and all(v and v > 0 for v in entry['native'] + entry['against'])
    targets = {t['target']: t for t in data['targets']}
    for label in labels:
        assert targets[label]['ratio'] == pytest.approx(paired[label]['ratio'])
        assert targets[label]['pair_ratios'] == paired[label]['ratios']
    # the same targets paired again with the server's AOF switched, which is put back afterwards
    was = r.config_get('appendonly')['appendonly']
    switched = data['paired_switched']
    assert switched['persistence'] == ('no AOF' if was == 'yes' else 'AOF everysec')
    assert set(switched['pairs']) == labels
    for label in labels:
        entry = switched['pairs'][label]
        assert len(entry['ratios']) == 2 and all(v and v > 0 for v in entry['native'] + entry['against'])
        assert targets[label]['switched']['ratio'] == pytest.approx(entry['ratio'])
    assert data['leftover_keys'] == 0 and r.dbsize() == 0


def test_run_scale(redis_url: str, r: Any) -> None:
    cfg = tiny(
        redis_url,
        impls=('native',),
        ops=('publish',),
        batches=(10,),
        scale=True,
        ceiling=False,
        latency=False,
        rss_messages=0,
    )
    data = run(cfg, quiet=True)
    scale = data['scale']
    assert set(scale['depths']) == {'1000', '10000'} and scale['ratio'] > 0
    assert all(d['msgs_per_s'] > 0 and d['server_us_per_msg'] > 0 for d in scale['depths'].values())
    # the depths are drained in alternating rounds, each round a share of the messages
    assert scale['rounds'] == 4 and all(len(d['rounds']) == 4 for d in scale['depths'].values())
    assert r.dbsize() == 0


def test_peers_rfq_and_pyrsmq(redis_url: str, r: Any) -> None:
    assert RFQ_PYTHON.exists(), 'make setup creates .venv-rfq with rfq 1.4.0'
    cfg = tiny(
        redis_url,
        impls=('rfq', 'pyrsmq'),
        ops=('publish', 'claim+commit', 'rsmq send', 'rsmq receive+delete'),
        ceiling=False,
        latency=False,
        rss_messages=0,
        rfq_python=str(RFQ_PYTHON),
    )
    data = run(cfg, quiet=True)
    cells = {(row['operation'], row['batch'], row['impl']): row for row in data['rows']}
    assert cells['publish', 10, 'rfq']['messages'] == 10 and cells['claim+commit', 1, 'rfq']['messages'] == 10
    assert ('claim+commit', 10, 'rfq') not in cells  # rfq has no batch consume
    if importlib.util.find_spec('rsmq') is None:
        assert 'PyRSMQ' in data['unavailable']['pyrsmq']
    else:
        assert cells['rsmq send', 1, 'pyrsmq']['messages'] == 10
        assert cells['rsmq receive+delete', 1, 'pyrsmq']['messages'] == 10
    assert all(row['note'] == '' for row in data['rows'])
    assert r.dbsize() == 0


def test_main_json_from_json_readme_and_plot(
    redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, png, readme = tmp_path / 'b.json', tmp_path / 'b.png', tmp_path / 'README.md'
    argv = [
        '--url',
        redis_url,
        '--quick',
        '--impl',
        'native',
        '--op',
        'publish',
        '--batch',
        '10',
        '--messages',
        '50',
        '--no-ceiling',
        '--no-latency',
        '--no-scale',
        '--rss-messages',
        '0',
        '--spark-rows',
        '0',
        '--json',
        str(out),
    ]
    assert main(argv) == 0
    first = capsys.readouterr()
    assert '| ' not in first.out and 'publish' in first.out  # the console table, not markdown
    data = json.loads(out.read_text())
    assert data['schema'] == JSON_SCHEMA and [r['impl'] for r in data['rows']] == ['native']
    readme.write_text('<!-- perf-table:start -->\n<!-- perf-table:end -->\n')
    status = main(['--from-json', str(out), '--update-readme', str(readme), '--plot', str(png)])
    err = capsys.readouterr().err
    assert '| publish | 10 | native |' in readme.read_text()
    if importlib.util.find_spec('matplotlib') is None:
        assert status == 1 and 'matplotlib' in err and not png.exists()
    else:
        assert status == 0 and png.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    bad = tmp_path / 'old.json'
    bad.write_text(json.dumps({'schema': 1, 'rows': []}))
    assert main(['--from-json', str(bad)]) == 1
    assert 'schema 1' in capsys.readouterr().err


def test_main_unreachable_server(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(['--url', 'redis://127.0.0.1:1/0', '--quick']) == 1
    assert 'cannot reach Redis' in capsys.readouterr().err


def test_noisy_cell_is_measured_again(redis_url: str) -> None:
    # a busy loop makes every measurement noisy (over 20% of a core used by another process)
    busy = subprocess.Popen(
        [sys.executable, '-c', 'import time\nend = time.time() + 60\nprint(flush=True)\nwhile time.time() < end: pass'],
        stdout=subprocess.PIPE,
    )
    try:
        # Spinning before the measurement starts: it lasts milliseconds, less than the interpreter takes to start.
        assert busy.stdout is not None and busy.stdout.readline() == b'\n'
        cfg = tiny(
            redis_url,
            impls=('native',),
            ops=('publish',),
            batches=(1,),
            messages=4000,
            # 200 single publishes of 100 kB: long enough (tens of ms) for /proc/stat's 10 ms ticks to see the loop
            size=100_000,
            noise_retries=1,
            ceiling=False,
            latency=False,
            rss_messages=0,
        )
        [row] = run(cfg, quiet=True)['rows']
    finally:
        busy.kill()
        busy.wait(timeout=10)
    assert row['bg_cores'] > 0.2 and row['retries'] == 1 and row['messages'] == 200
