"""rfq topic operations, each implementation in the same group so pytest-benchmark compares them.

    pytest benches/ --benchmark-group-by=group --benchmark-columns=min,median,ops,rounds

``ops`` is calls per second; ``extra_info['messages']`` says how many messages one call handles.
"""

from __future__ import annotations

from typing import Any

PAYLOAD = {'payload': 'x' * 100}
BATCH = 1000


def _info(benchmark: Any, impl: str, group: str, messages: int) -> None:
    benchmark.group = group
    benchmark.extra_info.update({'impl': impl, 'messages': messages, 'payload_bytes': len(PAYLOAD['payload'])})


def test_publish_batch(benchmark: Any, impl: str, topic: Any) -> None:
    _info(benchmark, impl, f'publish_batch({BATCH})', BATCH)
    batch = [PAYLOAD] * BATCH
    ids = benchmark.pedantic(topic.publish_batch, args=(batch,), rounds=30, iterations=1, warmup_rounds=2)
    assert len(ids) == BATCH


def test_claim_commit(benchmark: Any, impl: str, topic: Any) -> None:
    _info(benchmark, impl, f'claim({BATCH})+commit', BATCH)
    batch = [PAYLOAD] * BATCH
    done: list[int] = []

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        topic.publish_batch(batch)  # not timed: every round drains exactly one batch
        return (), {}

    def claim_commit() -> None:
        msgs = topic.claim(count=BATCH, lease=60.0)
        done.append(len(topic.commit(msgs)))

    benchmark.pedantic(claim_commit, setup=setup, rounds=30, iterations=1, warmup_rounds=2)
    assert done and all(n == BATCH for n in done)


def test_publish_single(benchmark: Any, impl: str, topic: Any) -> None:
    _info(benchmark, impl, 'publish', 1)
    msg_id = benchmark.pedantic(topic.publish, args=(PAYLOAD,), rounds=2000, iterations=1, warmup_rounds=20)
    assert len(msg_id) == 32
