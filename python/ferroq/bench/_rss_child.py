"""Publish N messages from a generator in one ``publish_stream`` call; run by ``ferroq bench`` to watch its RSS.

Input (argv[1], JSON): ``{url, topic, n, size, impl}`` with impl ``native`` or ``pure``. It prints ``ready``
once connected (the parent takes the baseline RSS then), and at the end one JSON line
``{published, seconds}``. The generator makes a fresh dict per message, as an application reading a file
would; a client that streams the input in chunks keeps its memory flat, one that materialises it does not.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from typing import Any


def main() -> None:
    job = json.loads(sys.argv[1])
    client: Any
    if job['impl'] == 'native':
        import ferroq

        client = ferroq.Client(job['url'])
    else:
        import ferroq.pure

        client = ferroq.pure.Client(job['url'])
    topic = client.topic(job['topic'])
    body = ('ferroq' * (job['size'] // 6 + 1))[: job['size']]
    n = int(job['n'])
    topic.publish_batch([{'payload': body}])  # connect and load the script before the baseline
    topic.purge('backlog')

    def messages() -> Iterator[dict[str, str]]:
        for _ in range(n):
            yield {'payload': body}

    print('ready', flush=True)
    start = time.perf_counter()
    published = topic.publish_stream(messages())
    seconds = time.perf_counter() - start
    print(json.dumps({'published': published, 'seconds': seconds}), flush=True)
    client.close()


if __name__ == '__main__':
    main()
