"""Every (operation, batch, implementation) cell of ``ferroq bench``'s registry as a pytest-benchmark case.

    make bench-suite        # or: pytest benches/ --benchmark-group-by=group

Cells in one group (operation and batch size) are compared by pytest-benchmark. ``ops`` is calls per
second; ``extra_info['messages']`` is the messages one call handles, ``extra_info['msgs_per_s']`` the rate.
Implementations that run out of process (rfq 1.4.0 in .venv-rfq) time themselves: their one round is the
whole measurement and ``extra_info`` holds what they reported. Implementations that cannot run here (a
peer that is not installed) are skipped with the reason.
"""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from ferroq.bench import IMPLS, OPERATIONS, Config
from ferroq.bench._common import Admin, Progress
from ferroq.bench._registry import Context, open_session

ROUNDS = {1: 300, 100: 30, 1000: 10}
CELLS = [
    pytest.param(op, batch, impl.name, id=f'{op}-{batch}-{impl.name}')
    for op in OPERATIONS
    for batch in sorted(ROUNDS)
    for impl in IMPLS.values()
    if impl.supports(op, batch)
]


@pytest.mark.parametrize(('op', 'batch', 'impl_name'), CELLS)
def test_operation(benchmark: Any, redis_url: str, op: str, batch: int, impl_name: str) -> None:
    impl = IMPLS[impl_name]
    cfg = Config(url=redis_url, run_id=secrets.token_hex(3))
    reason = impl.available(cfg)
    if reason:
        pytest.skip(reason)
    benchmark.group = f'{op} ({batch})'
    benchmark.extra_info.update({'impl': impl_name, 'messages': batch, 'payload_bytes': cfg.size})
    admin = Admin(redis_url)
    ctx = Context(cfg, admin, f'fqb-{cfg.run_id}', batch, op)
    rounds, warmup = ROUNDS[batch], 2
    try:
        if impl.out_of_process:
            row = benchmark.pedantic(impl.measure, args=(ctx, op, batch * rounds, Progress(1, quiet=True)), rounds=1)
            benchmark.extra_info.update({'messages': row.messages, 'msgs_per_s': row.msgs_per_s})
            assert row.messages == batch * rounds, row.note
            return
        with open_session(impl, ctx) as session:
            done = []
            if OPERATIONS[op].drains:  # one step drains the queue (a burst worker): refill it before each round
                benchmark.pedantic(
                    lambda: done.append(session.step(batch)),
                    setup=lambda: session.setup(batch),
                    rounds=rounds,
                    warmup_rounds=warmup,
                )
            else:
                session.setup(batch * (rounds + warmup))
                benchmark.pedantic(lambda: done.append(session.step(batch)), rounds=rounds, warmup_rounds=warmup)
        assert done and all(n == batch for n in done), done
        if benchmark.stats is not None:  # None under --benchmark-disable (one call, no timing)
            benchmark.extra_info['msgs_per_s'] = batch / benchmark.stats.stats.median
    finally:
        left = admin.scan_keys(f'*fqb-{cfg.run_id}*', limit=10)
        admin.sweep(f'*fqb-{cfg.run_id}*')
        admin.close()
    assert not left, f'keys left after the benchmark: {left}'
