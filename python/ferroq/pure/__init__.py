"""The pure-Python client (redis-py): the reference implementation and the benchmark baseline.

It has the API of the native ``ferroq.Client`` / ``ferroq.AsyncClient``, sends the same scripts with the
same keys and arguments (so Redis ends in the same state), and raises the same :mod:`ferroq.exceptions`.

>>> from ferroq.pure import Client
>>> with Client('redis://127.0.0.1:6379/0') as client:   # doctest: +SKIP
...     client.topic('jobs').publish({'tile': 'T32UNE'})
"""

from __future__ import annotations

from ferroq.pure.async_client import AsyncClient, AsyncConsumerGroup, AsyncRsmqQueue, AsyncStream, AsyncTopic
from ferroq.pure.client import Client, ConsumerGroup, RsmqQueue, Stream, Topic

__all__ = [
    'AsyncClient',
    'AsyncConsumerGroup',
    'AsyncRsmqQueue',
    'AsyncStream',
    'AsyncTopic',
    'Client',
    'ConsumerGroup',
    'RsmqQueue',
    'Stream',
    'Topic',
]
