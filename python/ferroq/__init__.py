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
>>> stream = client.stream('events')         # a Streams topic (Redis Streams, consumer groups)
>>> stream.publish({'kind': 'signup'})       # doctest: +SKIP
>>> group = stream.group('mailer')           # doctest: +SKIP
>>> group.create()                           # doctest: +SKIP
>>> group.ack(group.read(count=10))          # doctest: +SKIP

``ferroq.Client`` / ``ferroq.AsyncClient`` are the native (Rust) clients; ``ferroq.pure`` has a
pure-Python client with the same API, errors, keys and scripts. ``ferroq.Worker`` / ``ferroq.AsyncWorker``
run a handler per message with retries, dead-lettering and graceful shutdown (:mod:`ferroq.worker`).
"""

from __future__ import annotations

from ferroq._ferroq import (
    AsyncClient,
    AsyncConsumerGroup,
    AsyncRsmqQueue,
    AsyncStream,
    AsyncTopic,
    Client,
    ConsumerGroup,
    RsmqQueue,
    Stream,
    Topic,
    __version__,
)
from ferroq.batches import AsyncBatches, AsyncRsmqBatches, Batches, RsmqBatches
from ferroq.exceptions import (
    BatchError,
    CommandTimeout,
    ConnectionFailed,
    DataLoss,
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
    TlsError,
    UnsupportedServer,
)
from ferroq.types import (
    GroupInfo,
    InspectEntry,
    Message,
    PendingEntry,
    RsmqAttributes,
    RsmqMessage,
    StreamEntry,
    StreamInfo,
    TopicStats,
)
from ferroq.worker import AsyncWorker, Worker, WorkerStats

__all__ = [
    'AsyncBatches',
    'AsyncClient',
    'AsyncConsumerGroup',
    'AsyncRsmqBatches',
    'AsyncRsmqQueue',
    'AsyncStream',
    'AsyncTopic',
    'AsyncWorker',
    'BatchError',
    'Batches',
    'Client',
    'CommandTimeout',
    'ConnectionFailed',
    'ConsumerGroup',
    'DataLoss',
    'FerroqError',
    'GroupInfo',
    'InspectEntry',
    'InvalidArgument',
    'InvalidMessage',
    'InvalidName',
    'LeaseLost',
    'Message',
    'MessageTooLarge',
    'OutOfMemory',
    'PendingEntry',
    'PermissionDenied',
    'ProtocolError',
    'QueueExists',
    'QueueNotFound',
    'RsmqAttributes',
    'RsmqBatches',
    'RsmqMessage',
    'RsmqQueue',
    'ServerError',
    'ServerUnavailable',
    'Stream',
    'StreamEntry',
    'StreamInfo',
    'TlsError',
    'Topic',
    'TopicStats',
    'UnsupportedServer',
    'Worker',
    'WorkerStats',
    '__version__',
]
