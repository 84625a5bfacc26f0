"""Key layout of every protocol: the only place Python builds Redis key names.

``src/protocol/keys.rs`` is the Rust twin; ``tests/unit/test_parity.py`` checks that both agree.
"""

from __future__ import annotations

import hashlib

RFQ_PREFIX = 'rfq:'

#: Names a topic may have: rfq's recommended ``[a-z0-9]+`` and a little more, never ``:``, glob or brace.
TOPIC_NAME_PATTERN = r'[A-Za-z0-9_.-]{1,128}'


def rfq_backlog(topic: str) -> str:
    """LIST of waiting ids; producers push at the head, consumers take from the tail."""
    return f'{RFQ_PREFIX}{topic}:backlog'


def rfq_nextlog(topic: str) -> str:
    """LIST of claimed (in-flight) ids; the newest claim at the head."""
    return f'{RFQ_PREFIX}{topic}:nextlog'


def rfq_message_prefix(topic: str) -> str:
    """Prefix of the message HASH keys; the key of a message is this plus its id."""
    return f'{RFQ_PREFIX}{topic}:message:'


def rfq_message(topic: str, msg_id: str) -> str:
    """HASH holding one message as a flat map of string fields."""
    return f'{RFQ_PREFIX}{topic}:message:{msg_id}'


def rfq_leases(topic: str) -> str:
    """ferroq side key, a ZSET: id -> lease deadline in epoch ms (Redis TIME). rfq clients ignore it."""
    return f'{RFQ_PREFIX}{topic}:leases'


def rfq_deliveries(topic: str) -> str:
    """ferroq side key, a HASH: ``<id>`` -> the message's record ``<count>[ <claimed_at_ms>[ <owner>]][\\n<error>]``
    (delivery count, the current claim's time and owner, the last error of a message dead-lettered here; see
    docs/protocol.md)."""
    return f'{RFQ_PREFIX}{topic}:deliveries'


def rfq_delayed(topic: str) -> str:
    """ferroq side key, a ZSET: id -> epoch ms (Redis TIME) at which a delayed release is due again."""
    return f'{RFQ_PREFIX}{topic}:delayed'


def rfq_claims(topic: str) -> str:
    """ferroq side key, a HASH: ``<claim>`` -> ``<claimed_at_ms> <owner or -> <id> <id> ...`` (the open ids of one
    claim, in claim order) and ``<claim>:d`` -> those of its ids claimed before (see docs/protocol.md)."""
    return f'{RFQ_PREFIX}{topic}:claims'


def rfq_claim_leases(topic: str) -> str:
    """ferroq side key, a ZSET: ``<claim>`` -> the claim's lease deadline in epoch ms (Redis TIME)."""
    return f'{RFQ_PREFIX}{topic}:claim_leases'


def rfq_inflight(topic: str) -> str:
    """ferroq side key, a SET of the ids held by open claims: how a claim finds an id that rfq's blind harvest
    requeued while a claim still held it."""
    return f'{RFQ_PREFIX}{topic}:inflight'


def rfq_published(topic: str, token: str) -> str:
    """ferroq side key, a STRING: the record that one publish chunk (named by its token) was written, with the
    number of messages it wrote; expires after the call's ``dedup_ttl``."""
    return f'{RFQ_PREFIX}{topic}:published:{token}'


def dedup_token(dedup_key: str, chunk: int) -> str:
    """The record token of chunk ``chunk`` of an idempotent publish: 32 hex digits of SHA1(``<dedup_key>:<chunk>``)."""
    return hashlib.sha1(f'{dedup_key}:{chunk}'.encode()).hexdigest()[:32]


def rfq_topic_keys(topic: str) -> list[str]:
    """The four per-topic keys every topic script takes first: backlog, nextlog, leases, deliveries."""
    return [rfq_backlog(topic), rfq_nextlog(topic), rfq_leases(topic), rfq_deliveries(topic)]


# --- RSMQ (smrchy/rsmq 0.12, PyRSMQ 0.6): the keys of a queue ``q`` in namespace ``ns`` -------------

#: RSMQ's queue-name rule (Node RSMQ ``_VALID.qname``).
RSMQ_QNAME_PATTERN = r'[A-Za-z0-9_-]{1,160}'
#: Namespaces ferroq accepts (RSMQ itself checks nothing).
RSMQ_NS_PATTERN = r'[A-Za-z0-9_.:-]{1,64}'
#: RSMQ's message-id rule (Node RSMQ ``_VALID.id``).
RSMQ_ID_PATTERN = r'[A-Za-z0-9:]{32}'


def rsmq_queues(ns: str) -> str:
    """SET of the queue names of a namespace."""
    return f'{ns}:QUEUES'


def rsmq_queue(ns: str, qname: str) -> str:
    """ZSET: message id -> epoch ms at which it is next receivable."""
    return f'{ns}:{qname}'


def rsmq_hash(ns: str, qname: str) -> str:
    """HASH: the queue attributes and, per message, ``<id>`` (body), ``<id>:rc``, ``<id>:fr``."""
    return f'{ns}:{qname}:Q'


def rsmq_channel(ns: str, qname: str) -> str:
    """Pub/sub channel of realtime notifications (the queue size is published on send)."""
    return f'{ns}:rt:{qname}'


def rsmq_published(ns: str, qname: str, token: str) -> str:
    """ferroq side key, a STRING: the ids one send chunk (named by its token) sent. RSMQ clients only read
    ``{ns}:{q}``, ``{ns}:{q}:Q`` and ``{ns}:QUEUES``, so they ignore it."""
    return f'{ns}:{qname}:published:{token}'


def rsmq_keys(ns: str, qname: str) -> list[str]:
    """QUEUES set, queue ZSET, queue HASH, realtime channel (the order of ``_ferroq.rsmq_keys``)."""
    return [rsmq_queues(ns), rsmq_queue(ns, qname), rsmq_hash(ns, qname), rsmq_channel(ns, qname)]


# --- Streams topics: the keys of a stream ``s`` ---------------------------------------------------

STREAM_PREFIX = 'ferroq:stream:'
#: How long a publish token's record lives, in ms: it must outlast a client's retry after a dropped reply
#: (connect timeout + command timeout), and each record costs ~200 bytes until it expires.
#: RSMQ send records live as long.
STREAM_PUBLISH_TOKEN_MS = 120_000


def stream_key(name: str) -> str:
    """STREAM holding the stream's entries."""
    return f'{STREAM_PREFIX}{name}'


def stream_published(name: str, token: str) -> str:
    """STRING: the ids one publish call (identified by its token) appended; expires after a while."""
    return f'{STREAM_PREFIX}{name}:published:{token}'


# --- the Spark connector's keys, beside each queue's own (so one hash tag can cover both) ---------------


def spark_prefix(kind: str, name: str, ns: str = 'rsmq') -> str:
    """Prefix of the keys ``ferroq.spark`` keeps for the topic, RSMQ queue or stream ``name``."""
    if kind == 'topic':
        return f'{RFQ_PREFIX}{name}:spark:'
    if kind == 'rsmq':
        return f'{ns}:{name}:spark:'
    return f'{STREAM_PREFIX}{name}:spark:'


def spark_snapshot(prefix: str, token: str) -> str:
    """LIST or ZSET: a copy of a queue's ids taken when a batch read is planned; expires."""
    return f'{prefix}snapshot:{token}'


def spark_stage(prefix: str, job: str, partition: int, attempt: int) -> str:
    """LIST: Arrow IPC streams of the rows one task attempt of an atomic write staged; expires."""
    return f'{prefix}stage:{job}:{partition}:{attempt}'


def spark_sink(prefix: str, sink_id: str) -> str:
    """STRING: the last micro-batch id the streaming sink ``sink_id`` committed."""
    return f'{prefix}sink:{sink_id}'


def spark_lock(prefix: str, consumer: str) -> str:
    """STRING: the streaming query instance reading as ``consumer`` now; expires unless renewed."""
    return f'{prefix}lock:{consumer}'


def spark_claims(prefix: str, consumer: str, seq: int) -> str:
    """LIST: the claims micro-batch ``seq`` of ``consumer`` made (rfq topics), an entry each: ``<token> <id> ...``
    (the claim's token, then its ids in claim order)."""
    return f'{prefix}claims:{consumer}:{seq}'


def spark_ledger(prefix: str, consumer: str, seq: int) -> str:
    """LIST: the previous layout of :func:`spark_claims`, an entry per message: ``<id> <token>`` (or, before batch
    claims, ``<id> <delivery count>``). Read only to carry a query's open batches over an upgrade."""
    return f'{prefix}ledger:{consumer}:{seq}'
