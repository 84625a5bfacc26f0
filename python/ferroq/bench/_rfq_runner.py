"""Time rfq 1.4.0 (PyPI, as shipped with redis-py 3.5) in its own interpreter; print the counters as JSON.

Run by ``ferroq bench`` with the interpreter of a venv that has rfq (``.venv-rfq``); the job comes as JSON
on stdin: ``{url, topic, op, batch, n, size, time_limit}``. ``op`` is ``publish`` (``Queue.publish`` at
batch 1, else ``Queue.publish_batch``) or ``claim+commit`` (``Queue.consume`` + ``Task.done``, one message
at a time: rfq has no batch consume; the topic is filled beforehand). The output is one JSON object:
``{messages, seconds, cpu, server_cpu, machine_cpu}``, measured around the timed loop only, so the
interpreter's start-up is not counted. Only the standard library, redis-py and rfq are imported here.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))  # rfq's venv has no ferroq: import the sibling module by path
from _proc import machine_busy  # type: ignore[import-not-found]  # found at run time via the path above


def _server_cpu(r: Any) -> float | None:
    try:
        info = r.info('cpu')
        return float(info['used_cpu_user']) + float(info['used_cpu_sys'])
    except Exception:  # noqa: BLE001 -- a missing figure, not a failed run
        return None


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else b - a


def main() -> None:
    job = json.loads(sys.stdin.read())
    signal.alarm(int(job['time_limit']) + 30)  # rfq's consume blocks forever on an empty backlog: never hang
    import redis
    from rfq.rfq import Queue  # type: ignore[import-not-found,unused-ignore]

    r = redis.Redis.from_url(job['url'])
    q = Queue(r)
    topic, n, batch = job['topic'], int(job['n']), int(job['batch'])
    body = {'payload': ('ferroq' * (job['size'] // 6 + 1))[: job['size']]}
    deadline = time.perf_counter() + float(job['time_limit'])
    done = 0
    server, machine, cpu, wall = _server_cpu(r), machine_busy(), time.process_time(), time.perf_counter()
    if job['op'] == 'publish':
        while done < n and time.perf_counter() <= deadline:
            k = min(batch, n - done)
            if batch == 1:
                q.publish(topic=topic, message=body)
            else:
                q.publish_batch(topic=topic, messages=[body] * k)
            done += k
    else:
        while done < n and time.perf_counter() <= deadline:
            task = q.consume(topic=topic)
            task.result()
            task.done()
            done += 1
    seconds, cpu = time.perf_counter() - wall, time.process_time() - cpu
    machine_end, server_end = machine_busy(), _server_cpu(r)
    out = {
        'messages': done,
        'seconds': seconds,
        'cpu': cpu,
        'server_cpu': _diff(server, server_end),
        'machine_cpu': _diff(machine, machine_end),
    }
    print(json.dumps(out))


if __name__ == '__main__':
    main()
