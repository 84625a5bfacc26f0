"""Streaming reads of an rfq topic: claimed per micro-batch, committed when Spark commits the batch.

Offsets are micro-batch numbers, ``{"seq": k}``. Planning batch k claims up to ``maxRecordsPerTrigger``
messages with ferroq's own claim (a lease of ``claimTtl``, the owner ``spark.<consumer>.<k>``, delivery
counts: plain rfq tools, ``inspect`` and the harvester see them as in flight) and lists each claim, ``<token>
<id> <id> ...``, in the batch's ledger, ``rfq:<topic>:spark:claims:<consumer>:<k>``: an entry per claim of
chunk_size messages, so neither the planner nor the executors do any work per message to write or read it.
The executors read index ranges of the ledger and the bodies. A batch replayed after a failure reads the
same ledger: the same messages. A planner that starts rewrites the ledgers a previous release left (an entry
per message, ``...:spark:ledger:<consumer>:<k>``) in this layout first.

When Spark commits batch k (one batch late: Spark commits a batch when it plans the next), its messages
are committed, fenced by their claim, and its ledger is deleted. The leases of the ledgers still open are
renewed while the query polls. If the planner dies between the claim and the ledger's write, the next
planner finds the claims by their owner and puts them in the ledger (under a new claim).

Two jobs run in threads while the executors read batch k: the commit of batch k-1 and the claim of batch
k+1 (into its ledger; the poll that plans k+1 finds it written). The next poll waits for both and fails
the query with what made either fail, so at every planning step the batches Spark committed are committed
on the queue too. A commit cut short by a crash is finished by the next one (it commits every ledger up
to its batch that is still there), and a ledger claimed ahead is the next batch of a restarted query.

A query that is retired leaves its last ledgers claimed until their leases end (then the harvester
requeues them): :func:`ferroq.spark.release` gives them back at once.
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow

from ferroq.protocol import keys
from ferroq.pure import _rfq, _validation
from ferroq.spark import _conn, _lock
from ferroq.spark._admin import carry_over, claim_entry, commit_ledger, ledger_claims, ledger_messages
from ferroq.spark._options import Plan
from ferroq.spark._read import Span, topic_batches
from ferroq.spark._rows import BATCH_ROWS

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

__all__ = ['TopicReader']

#: Ledger entries (claims) written per RPUSH.
LEDGER_STEP = 100
#: Claims of chunk_size messages sent in one round trip by the planner (a pipeline: each claim is atomic).
CLAIMS_PER_TRIP = 10
#: With no row limit, a micro-batch takes at most this many messages.
DEFAULT_BATCH_ROWS = 1_000_000


def _owner(consumer: str, seq: int) -> str:
    return f'spark.{consumer}.{seq}'


class TopicReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, plan: Plan, schema: StructType) -> None:
        self.plan = plan
        self.schema = schema
        target = plan.target
        self.prefix = keys.spark_prefix('topic', target.name)
        self.lock_key = keys.spark_lock(self.prefix, plan.consumer)
        self.instance = uuid.uuid4().hex
        self._latest: int | None = None
        self._remaining: int | None = None  # Trigger.AvailableNow: what may still be claimed
        self._renewed: dict[int, float] = {}  # ledger seq -> when its leases were last renewed (monotonic)
        self._checked_orphans = False
        self._committing = _InThread('ferroq-spark-commit')  # the commit of the batch before
        self._claiming = _InThread('ferroq-spark-claim')  # the claim of the batch after

    def _ledger(self, seq: int) -> str:
        return keys.spark_claims(self.prefix, self.plan.consumer, seq)

    def _topic(self) -> Any:
        return _conn.native(self.plan.connection).topic(self.plan.target.name)

    # --- planning ---

    def initialOffset(self) -> dict[str, int]:
        return {'seq': 0}

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.plan.max_records_per_trigger
        return ReadAllAvailable() if n is None else ReadMaxRows(n)

    def prepareForTriggerAvailableNow(self) -> None:
        self._remaining = int(_conn.raw(self.plan.connection).call('llen', keys.rfq_backlog(self.plan.target.name)))

    def latestOffset(self, start: dict[str, int] | None = None, limit: ReadLimit | None = None) -> dict[str, int]:
        self._committing.wait()
        self._claiming.wait()
        raw = _conn.raw(self.plan.connection)
        begin = int((start or {}).get('seq', self._latest or 0))
        self._hold_lock(raw, begin)
        if self._latest is None:
            self._track_open_ledgers(raw, begin)
        self._renew(raw, begin)
        rows = self._rows(limit)
        end = self._plan_batch(raw, begin, rows)
        self._hold_lock(raw, begin, end)
        self._latest = end
        if end > begin:
            # The batch after is claimed while this one is read: the next poll finds its ledger written.
            self._claiming.start(self._plan_batch, raw, end, rows)
        return {'seq': end}

    def _rows(self, limit: ReadLimit | None) -> int:
        """The most messages a micro-batch takes under ``limit``."""
        rows = limit.max_rows if isinstance(limit, ReadMaxRows) else self.plan.max_records_per_trigger
        if isinstance(limit, ReadAllAvailable) or rows is None:
            rows = DEFAULT_BATCH_ROWS
        return rows

    def _plan_batch(self, raw: _conn.Raw, begin: int, rows: int) -> int:
        """Plans the batch after ``begin`` (up to ``rows`` messages); returns its number, ``begin`` if empty."""
        seq = begin + 1
        ledger = self._ledger(seq)
        if int(raw.call('llen', ledger)) > 0:  # planned before (claimed ahead, or before a restart)
            self._renewed.setdefault(seq, time.monotonic())
            return seq
        if self._remaining is not None:
            rows = min(rows, self._remaining)
        n = self._claim(raw, seq, rows)
        if n == 0:
            return begin
        if self._remaining is not None:
            self._remaining -= n
        self._renewed[seq] = time.monotonic()
        return seq

    def _claim(self, raw: _conn.Raw, seq: int, rows: int) -> int:
        """Claims up to ``rows`` messages into ledger ``seq``; returns how many it holds.

        The planner needs ids only (the executors read the bodies), so it runs the claim script itself
        instead of ``Topic.claim``, which would fetch every body."""
        owner, lease = _owner(self.plan.consumer, seq), self.plan.claim_ttl
        entries: list[str] = []
        n = 0
        if not self._checked_orphans:
            # Claims of a planner that died before writing this ledger: they come back under one new claim.
            resumed = self._topic().resume(owner, lease=lease)
            for token, claim in itertools.groupby(resumed, key=lambda m: m.claim or ''):
                entries.append(claim_entry(token, ' '.join(m.id for m in claim)))
            n = len(resumed)
            self._checked_orphans = True
        topic = _rfq.topic_keys(self.plan.target.name)
        lease_ms = str(_validation.check_lease(lease))
        # A claim per chunk_size messages (one atomic script each), which the commit hands back whole in one
        # call (commit_ledger). Measured per 100k messages: claims of 1000 cost the server less than claims
        # of 10,000, both to make and to commit. CLAIMS_PER_TRIP of them go in one round trip.
        step = self.plan.connection.chunk_size
        while n < rows:
            counts = [min(step, rows - n - i) for i in range(0, min(rows - n, step * CLAIMS_PER_TRIP), step)]
            tokens = [_rfq.new_claim_token() for _ in counts]
            calls = [(topic.eight, [c, lease_ms, '', owner, t]) for c, t in zip(counts, tokens)]
            drained = False
            for want, token, reply in zip(counts, tokens, raw.scripts('claim-8n', calls, protocol='rfq')):
                try:
                    ids, count = _rfq.claim_ids(reply)
                except ValueError:
                    raise raw.reply_error('rfq/claim-8n', reply) from None
                if count:
                    entries.append(claim_entry(token, ids))
                    n += count
                drained = drained or count < want
            if drained:  # the backlog ran out: the claims after that one found nothing
                break
        for i in range(0, len(entries), LEDGER_STEP):
            raw.call('rpush', self._ledger(seq), *entries[i : i + LEDGER_STEP])
        return n

    def _carried_over(self, raw: _conn.Raw, seq: int) -> bool:
        """Whether batch ``seq`` has a ledger, after rewriting one of the previous layout (an entry per message,
        left by the previous release) in this one."""
        previous = keys.spark_ledger(self.prefix, self.plan.consumer, seq)
        if int(raw.call('exists', previous)):
            carry_over(raw, previous, self._ledger(seq))
        return bool(int(raw.call('exists', self._ledger(seq))))

    def _track_open_ledgers(self, raw: _conn.Raw, begin: int) -> None:
        """A planner that starts (a restarted query) renews the leases of the ledgers still open, from now on: the
        batch claimed ahead, and those up to ``begin`` that Spark has not committed."""
        self._carried_over(raw, begin + 1)
        seq = begin
        while seq > 0 and self._carried_over(raw, seq):
            self._renewed.setdefault(seq, time.monotonic())
            seq -= 1

    def _renew(self, raw: _conn.Raw, committed_to: int) -> None:
        """Renews the leases of open ledgers once a quarter of claimTtl has passed since the last time."""
        now = time.monotonic()
        due = self.plan.claim_ttl / 4
        for seq in list(self._renewed):
            if seq <= committed_to - 1:
                self._renewed.pop(seq)
            elif now - self._renewed[seq] >= due:
                topic = self._topic()
                for claim in ledger_messages(raw, self.plan.target.name, self._ledger(seq)):
                    topic.extend(claim, lease=self.plan.claim_ttl)
                self._renewed[seq] = now

    def reportLatestOffset(self) -> dict[str, int] | None:
        """The last planned batch, and ``lag``: the messages waiting in the backlog (not claimed yet)."""
        backlog = int(_conn.raw(self.plan.connection).call('llen', keys.rfq_backlog(self.plan.target.name)))
        return {'seq': self._latest or 0, 'lag': backlog}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> Sequence[InputPartition]:
        raw = _conn.raw(self.plan.connection)
        parts: list[InputPartition] = []
        for seq in range(int(start['seq']) + 1, int(end['seq']) + 1):
            ledger = self._ledger(seq)
            n = int(raw.call('llen', ledger))
            k = max(1, min(self.plan.num_partitions, n))
            parts.extend(Span(ledger, n * i // k, n * (i + 1) // k) for i in range(k) if n)
        return parts

    def commit(self, end: dict[str, int]) -> None:
        """Starts committing every batch up to ``end`` on the queue, in a thread (see the module doc)."""
        self._committing.start(self._commit_up_to, int(end['seq']))

    def _commit_up_to(self, end: int) -> None:
        raw = _conn.raw(self.plan.connection)
        # Every ledger up to end that is still there (earlier ones were committed and deleted).
        seq = end
        while seq > 0 and int(raw.call('exists', self._ledger(seq))):
            seq -= 1
        for s in range(seq + 1, end + 1):
            ledger = self._ledger(s)
            commit_ledger(raw, self.plan.target.name, ledger)
            raw.call('delete', ledger)
            self._renewed.pop(s, None)

    def stop(self) -> None:
        try:
            self._claiming.wait()
            self._committing.wait()
        finally:
            _lock.free(_conn.raw(self.plan.connection), self.lock_key, self.instance)

    def _hold_lock(self, raw: _conn.Raw, start: int, end: int | None = None) -> None:
        what = f'{self.plan.target} as consumer {self.plan.consumer!r}'
        _lock.hold(raw, self.lock_key, self.instance, what, str(start), None if end is None else str(end))

    # --- reading (executors) ---

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, Span)
        raw = _conn.raw(self.plan.connection)
        # The batch's claims hold every message it lists: each counts as one delivery of its claim.
        ids = _ledger_ids(raw, partition)
        yield from topic_batches(self.plan.connection, self.plan.target.name, ids, self.schema, held=True)


class _InThread:
    """One job at a time in a thread of its own; :meth:`wait` joins it and raises what made it fail."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._thread: threading.Thread | None = None
        self._failed: BaseException | None = None

    def start(self, job: Callable[..., Any], *args: Any) -> None:
        self.wait()
        self._thread = threading.Thread(target=self._run, args=(job, args), name=self.name, daemon=True)
        self._thread.start()

    def _run(self, job: Callable[..., Any], args: tuple[Any, ...]) -> None:
        try:
            job(*args)
        except BaseException as exc:  # noqa: BLE001 (raised in the planner by the next wait)
            self._failed = exc

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        failed, self._failed = self._failed, None
        if failed is not None:
            raise failed


def _ledger_ids(raw: _conn.Raw, span: Span) -> Iterator[list[str]]:
    """The message ids of a ledger's entries (claims) [lo, hi), in pages of BATCH_ROWS or a little more."""
    page: list[str] = []
    for _, ids in ledger_claims(raw, span.snapshot, span.lo, span.hi):
        page += ids
        if len(page) >= BATCH_ROWS:
            yield page
            page = []
    if page:
        yield page
