"""ferroq: reliable, language-agnostic message queues on Redis.

>>> import ferroq
>>> client = ferroq.Client()                 # FERROQ_URL, RFQ_REDIS_HOST/PORT, or an embedded redis-server
>>> topic = client.topic('jobs')
>>> topic.publish({'tile': 'T32UNE'})        # doctest: +SKIP
>>> [msg] = topic.claim(count=1, lease=30)   # doctest: +SKIP
>>> topic.commit([msg])                      # doctest: +SKIP
>>> queue = client.rsmq('jobs')              # an RSMQ queue (smrchy/rsmq, PyRSMQ compatible)
>>> queue.create()                           # doctest: +SKIP
>>> queue.send('hello')                      # doctest: +SKIP
>>> m = queue.receive(vt=30)                 # doctest: +SKIP
>>> queue.delete(m.id)                       # doctest: +SKIP

``ferroq.Client`` / ``ferroq.AsyncClient`` are the native (Rust) clients; ``ferroq.pure`` has a
pure-Python client with the same API, errors, keys and scripts. ``ferroq.Worker`` / ``ferroq.AsyncWorker``
run a handler per message with retries, dead-lettering and graceful shutdown (:mod:`ferroq.worker`).
"""

from __future__ import annotations

from ferroq._ferroq import AsyncClient, AsyncRsmqQueue, AsyncTopic, Client, RsmqQueue, Topic, __version__
from ferroq.exceptions import (
    BatchError,
    CommandTimeout,
    ConnectionFailed,
    FerroqError,
    InvalidArgument,
    InvalidMessage,
    InvalidName,
    LeaseLost,
    MessageTooLarge,
    OutOfMemory,
    PermissionDenied,
    ProtocolError,
    QueueExists,
    QueueNotFound,
    ServerError,
    ServerUnavailable,
)
from ferroq.types import InspectEntry, Message, RsmqAttributes, RsmqMessage, TopicStats
from ferroq.worker import AsyncWorker, Worker, WorkerStats

__all__ = [
    'AsyncClient',
    'AsyncRsmqQueue',
    'AsyncTopic',
    'AsyncWorker',
    'BatchError',
    'Client',
    'CommandTimeout',
    'ConnectionFailed',
    'FerroqError',
    'InspectEntry',
    'InvalidArgument',
    'InvalidMessage',
    'InvalidName',
    'LeaseLost',
    'Message',
    'MessageTooLarge',
    'OutOfMemory',
    'PermissionDenied',
    'ProtocolError',
    'QueueExists',
    'QueueNotFound',
    'RsmqAttributes',
    'RsmqMessage',
    'RsmqQueue',
    'ServerError',
    'ServerUnavailable',
    'Topic',
    'TopicStats',
    'Worker',
    'WorkerStats',
    '__version__',
]
