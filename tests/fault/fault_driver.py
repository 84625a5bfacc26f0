"""A producer or consumer process of the fault suite; it appends its history to a JSONL file.

Run as ``python fault_driver.py '<json config>'``. Every loop is bounded by a count and by ``deadline``
seconds. Roles:

- ``producer``: ``batches`` calls of ``publish_batch`` of ``batch`` messages with unique keys, to an rfq
  topic or a Streams topic. A failed call is recorded with its keys (outcome unknown) and never repeated:
  a retry with new ids could duplicate, and deciding that is the client's job (it retries once,
  insert-if-absent on rfq, with the call's publish token on a stream).
- ``consumer``: claim / (``work`` seconds) / commit until the stop file exists; ``harvest_every``
  seconds it also requeues expired leases. On a Streams topic (``group`` set): read / ack, and
  autoclaim what other consumers left pending for ``lease`` seconds (see ``_fault_queues``).
- ``worker``: a ``ferroq.Worker`` whose handler records each message it is given.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).parent))

from _fault_history import Recorder, body, delivery
from _fault_queues import Target

from ferroq.exceptions import FerroqError


class Runner:
    """Calls a client method the same way for the sync and the asyncio clients."""

    def __init__(self, impl: str, url: str, options: dict[str, Any]) -> None:
        self.loop = asyncio.new_event_loop() if impl.endswith('async') else None
        if impl.startswith('native'):
            import ferroq as mod
        else:
            import ferroq.pure as mod  # type: ignore[no-redef]
        cls = mod.AsyncClient if self.loop else mod.Client
        self.client = self.call(cls, url, **options)

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if self.loop is None:
            return fn(*args, **kwargs)

        async def go() -> Any:  # on the loop: the native async client needs a running loop
            result = fn(*args, **kwargs)
            return await result if asyncio.iscoroutine(result) or asyncio.isfuture(result) else result

        return self.loop.run_until_complete(go())


class Backoff:
    def __init__(self, record: Recorder) -> None:
        self.record = record
        self.errors = 0

    def failed(self, op: str, exc: BaseException) -> None:
        self.errors += 1
        time.sleep(min(0.02 * 2 ** min(self.errors, 5), 0.3))

    def ok(self, op: str) -> None:
        if self.errors:
            self.record('recover', op=op, after=self.errors)
            self.errors = 0


def error_text(exc: BaseException) -> str:
    return f'{type(exc).__name__}: {exc}'[:300]


def produce(cfg: dict[str, Any], run: Runner, target: Target, record: Recorder, deadline: float) -> None:
    topic = target.publisher(run.client, run.call)
    backoff = Backoff(record)
    name = cfg['proc']
    for i in range(cfg['batches']):
        if time.monotonic() > deadline:
            break
        keys = [f'{name}.{i}.{j}' for j in range(cfg['batch'])]
        t0 = time.monotonic()
        try:
            ids = run.call(topic.publish_batch, [body(k, cfg.get('pad', 0)) for k in keys])
        except FerroqError as exc:
            record('pub', t0=t0, keys=keys, err=error_text(exc))
            backoff.failed('pub', exc)
            continue
        record('pub', t0=t0, keys=keys, ids=ids)
        backoff.ok('pub')
        if cfg.get('pace'):
            time.sleep(cfg['pace'])


def consume(cfg: dict[str, Any], run: Runner, target: Target, record: Recorder, deadline: float) -> None:
    queue = target.consumer(run.client, run.call, cfg['proc'])
    backoff = Backoff(record)
    stop = Path(cfg['stop_file'])
    lease = cfg['lease']
    next_harvest = time.monotonic()
    for _ in range(1_000_000):
        if time.monotonic() > deadline or stop.exists():
            break
        msgs: list[Any] = []
        if cfg.get('harvest_every') and time.monotonic() >= next_harvest:
            next_harvest = time.monotonic() + cfg['harvest_every']
            t0 = time.monotonic()
            try:
                msgs = queue.harvest(lease)  # a Streams group's autoclaim returns what it took over
            except FerroqError as exc:
                record('error', op='harvest', err=error_text(exc))
        if not msgs:
            t0 = time.monotonic()
            try:
                msgs = queue.claim(cfg['count'], cfg.get('block', 0.2), lease)
            except FerroqError as exc:
                record('claim', t0=t0, err=error_text(exc))
                backoff.failed('claim', exc)
                continue
            backoff.ok('claim')
        if not msgs:
            continue
        record('claim', t0=t0, msgs=[delivery(m) for m in msgs])
        if cfg.get('work'):
            time.sleep(cfg['work'])
        ids = [m.id for m in msgs]
        record('committing', ids=ids)  # a kill from here on may leave the commit applied but unrecorded
        t0 = time.monotonic()
        try:
            done = queue.commit(msgs)
        except FerroqError as exc:
            record('commit', t0=t0, ids=ids, err=error_text(exc))
            backoff.failed('commit', exc)
            continue
        record('commit', t0=t0, ids=ids, done=done)
        backoff.ok('commit')


def work(cfg: dict[str, Any], run: Runner, target: Target, record: Recorder, deadline: float) -> None:
    """A ``ferroq.Worker``: the handler records each message it gets; the Worker commits when it returns.

    The Worker's commit replies are internal, so a handled message is recorded as ``committing``.
    """
    import threading

    import ferroq

    def handle(msg: Any) -> None:
        t0 = time.monotonic()
        record('claim', t0=t0, msgs=[delivery(msg)])
        if cfg.get('work'):
            time.sleep(cfg['work'])
        record('committing', ids=[msg.id])

    options = {'handle_signals': False, **cfg.get('worker_options', {})}
    worker = ferroq.Worker(run.client, cfg['topic'], handle, **options)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    stop = Path(cfg['stop_file'])
    while time.monotonic() < deadline and not stop.exists() and thread.is_alive():
        time.sleep(0.05)
    worker.stop()
    thread.join(30)


ROLES = {'producer': produce, 'consumer': consume, 'worker': work}


def main() -> None:
    cfg = json.loads(sys.argv[1])
    record = Recorder(cfg['history'], cfg['proc'])
    record('start', pid=os.getpid(), role=cfg['role'], impl=cfg['impl'])
    deadline = time.monotonic() + cfg['deadline']
    run = Runner(cfg['impl'], cfg['url'], cfg.get('options', {}))
    ROLES[cfg['role']](cfg, run, Target.from_cfg(cfg), record, deadline)
    run.call(run.client.close)
    if run.loop is not None:
        run.loop.close()
    record('exit')


if __name__ == '__main__':
    main()
