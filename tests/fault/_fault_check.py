"""The checker: the history of a scenario plus the drained Redis -> counts (Jepsen's total-queue, for leases).

- **published**: keys whose publish_batch returned; **indeterminate**: keys of calls that raised, or that
  returned shortly before a lossy crash (they may or may not be in Redis); **recovered**: indeterminate
  keys that came out anyway.
- **lost**: published keys never completed. A key is completed when a commit reported it, or when its
  last holder sent a commit whose reply was lost or under-reported (``commit_unknown``) and nobody ever
  got it again.
- **unexpected**: deliveries of keys nobody published, with a wrong body, or under another id.
- **duplicated**: keys delivered more than once. Each earlier delivery must explain the next one
  (``causes``): its holder was killed (``kill``), paused (``pause``), its commit raised or was refused
  after its lease ran out (``expired``), or the claim's reply never reached the process (``unrecorded``:
  the delivery count skipped a number). A redelivery after a reported commit is ``unexplained``.
- **double_commits**: keys that two commits both reported committed (except a commit lost with the
  unwritten AOF tail at a lossy crash: acknowledged less than ``LOSSY_WINDOW`` before it, or with the claim
  before it).
- **premature**: a redelivery that completed before the previous claim's lease could have run out (a
  live lease was requeued).
- **double_claims**: two deliveries with the same delivery count (two holders of one token).
- **leftover**: keys of the topic still in Redis after the drain (of a Streams group: entries pending or
  never delivered; the entries themselves stay in the stream).
- **dead_lettered** (a Streams group with ``max_deliveries``): keys completed by going to the dead-letter
  stream instead of an ack. A key both acknowledged and dead-lettered is a double commit; one in the
  dead-letter stream twice, under another id or with a wrong body is unexpected.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _fault_history import Recorder, delivery, read
from _fault_queues import Target


@dataclass
class Delivery:
    proc: str
    key: str
    id: str
    n: int
    t0: float
    t1: float
    intact: bool
    #: none | sending | ok | refused | error | killed | killed-sending (killed while its commit was in flight)
    commit: str = 'none'
    #: when the commit's reply came (ok, refused or error)
    committed_at: float | None = None


@dataclass
class Counts:
    published: int = 0
    indeterminate: int = 0
    recovered: int = 0
    delivered: int = 0
    lost: int = 0
    unexpected: int = 0
    duplicated: int = 0
    double_commits: int = 0
    premature: int = 0
    unexplained: int = 0
    double_claims: int = 0
    commit_unknown: int = 0
    leftover: int = 0
    #: None when the group has no dead-letter stream (and for rfq topics): then not in the line.
    dead_lettered: int | None = None
    causes: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    samples: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))

    def line(self, name: str) -> str:
        causes = ','.join(f'{k}:{v}' for k, v in sorted(self.causes.items())) or '-'
        dead = '' if self.dead_lettered is None else f' dead_lettered={self.dead_lettered}'
        return (
            f'FAULT {name}: published={self.published} indeterminate={self.indeterminate} '
            f'recovered={self.recovered} delivered={self.delivered} lost={self.lost} '
            f'unexpected={self.unexpected} duplicated={self.duplicated} double_commits={self.double_commits} '
            f'premature={self.premature} unexplained={self.unexplained} commit_unknown={self.commit_unknown} '
            f'leftover={self.leftover}{dead} redelivered_by={causes} errors={sum(self.errors.values())}'
        )

    def note(self, what: str, key: str) -> None:
        if len(self.samples[what]) < 5:
            self.samples[what].append(key)

    def assert_targets(self, allowed_causes: set[str]) -> None:
        """lost = unexpected = double_commits = 0, nothing left, and duplicates only for the allowed causes."""
        detail = f'{self.line("check")} samples={dict(self.samples)}'
        assert self.published > 0, detail
        assert self.lost == 0, detail
        assert self.unexpected == 0, detail
        assert self.double_commits == 0, detail
        assert self.double_claims == 0, detail
        assert self.premature == 0, detail
        assert self.unexplained == 0, detail
        assert self.leftover == 0, detail
        assert set(self.causes) <= allowed_causes, detail


def _paused(pauses: dict[str, list[tuple[float, float]]], proc: str, start: float, end: float) -> bool:
    return any(a < end and b > start for a, b in pauses.get(proc, []))


def _pauses(events: list[dict[str, Any]]) -> dict[str, list[tuple[float, float]]]:
    """The SIGSTOP..SIGCONT intervals of each process, from the test's fault events."""
    pauses: dict[str, list[tuple[float, float]]] = defaultdict(list)
    stopped: dict[str, float] = {}
    for ev in events:
        if ev['ev'] == 'fault' and ev.get('kind') == 'stop':
            stopped[ev['target']] = ev['t']
        elif ev['ev'] == 'fault' and ev.get('kind') == 'cont':
            pauses[ev['target']].append((stopped.pop(ev['target']), ev['t']))
    for proc, since in stopped.items():
        pauses[proc].append((since, float('inf')))
    return pauses


#: How long before a lossy crash an acknowledged write may still be lost: ``appendfsync everysec`` postpones an
#: AOF write for at most 2 s while an fsync runs (and answers the clients meanwhile); 5 s leaves a margin.
LOSSY_WINDOW = 5.0

#: How much earlier than a lease's length a redelivery may complete without being premature. Leases run on
#: Redis's clock, in whole milliseconds of its wall clock (a delivery time and the harvest's now are each
#: truncated: up to 2 ms), and the history on each process's monotonic clock, whose rate may differ from the
#: wall clock's by up to 0.05% (under 1 ms per 1.5 s lease): 10 ms is ten times that.
CLOCK_SLACK = 0.01


def _lossy_crashes(events: list[dict[str, Any]]) -> list[float]:
    """When redis-server was killed while it could lose acknowledged writes (``appendfsync everysec`` may
    postpone an AOF write while an fsync runs, and answer the clients meanwhile)."""
    return [ev['t'] for ev in events if ev['ev'] == 'fault' and ev.get('kind') == 'server-kill' and ev.get('lossy')]


def _acked_before_crash(t: float, crashes: list[float], until: float = float('inf')) -> bool:
    """A write acknowledged at ``t`` may have been lost with the unwritten AOF tail of a lossy crash that came
    less than LOSSY_WINDOW after it (and before ``until``)."""
    return any(0 <= c - t < LOSSY_WINDOW and c < until for c in crashes)


def _lost_at_crash(d: Delivery, nxt: Delivery, crashes: list[float]) -> bool:
    """A lossy crash between ``d`` and ``nxt`` explains ``nxt``. Either ``nxt`` did not see ``d``'s claim (its count
    did not go up: the claim was lost with the unwritten AOF tail, so the message was in the backlog again),
    or ``d``'s commit was acknowledged shortly before the crash and lost while the claim before it was written
    (an AOF write postponed by a slow fsync), so the claim's lease ran out and the message came back."""
    if nxt.n <= d.n and any(d.t0 < c < nxt.t1 for c in crashes):
        return True
    at = d.committed_at
    return d.commit == 'ok' and at is not None and _acked_before_crash(at, crashes, nxt.t1)


@dataclass
class _History:
    crashes: list[float] = field(default_factory=list)  # lossy crashes (see _lossy_crashes)
    outcome: dict[str, str] = field(default_factory=dict)  # key -> 'ok' | 'unknown'
    published_id: dict[str, str] = field(default_factory=dict)
    deliveries: dict[str, list[Delivery]] = field(default_factory=lambda: defaultdict(list))

    def publish(self, ev: dict[str, Any]) -> None:
        # A publish acknowledged shortly before a lossy crash may have been lost with the unwritten AOF tail.
        ok = 'ids' in ev and not _acked_before_crash(ev['t'], self.crashes)
        for i, key in enumerate(ev['keys']):
            if ok:
                self.published_id[key] = ev['ids'][i]
            if self.outcome.get(key) != 'ok':
                self.outcome[key] = 'ok' if ok else 'unknown'

    def process(self, proc: str, events: list[dict[str, Any]], counts: Counts) -> None:
        """One process's events, in order: its deliveries and what became of each."""
        killed = events[0]['ev'] == 'start' and events[-1]['ev'] != 'exit'
        held: dict[str, Delivery] = {}
        for ev in events:
            kind = ev['ev']
            if 'err' in ev:
                counts.errors[ev['err'].split(':')[0]] += 1
                counts.note('errors', f'{proc} {kind}: {ev["err"][:160]}')
            if kind == 'pub':
                self.publish(ev)
            elif kind == 'claim' and 'msgs' in ev:
                for key, msg_id, n, whole in ev['msgs']:
                    d = Delivery(proc, key, msg_id, int(n), ev['t0'], ev['t'], bool(whole))
                    self.deliveries[key].append(d)
                    held[msg_id] = d
            elif kind == 'committing':
                for msg_id in ev['ids']:
                    if msg_id in held:
                        held[msg_id].commit = 'sending'
            elif kind == 'commit':
                for msg_id in ev['ids']:
                    d = held.pop(msg_id, None)
                    if d is not None:
                        d.commit = 'error' if 'err' in ev else ('ok' if msg_id in ev['done'] else 'refused')
                        d.committed_at = ev['t']
        for d in held.values():
            if killed:
                d.commit = 'killed-sending' if d.commit == 'sending' else 'killed'


def check(
    directory: Path,
    lease: float,
    absent: set[str] | None = None,
    leftover: int = 0,
    min_hold: float | None = None,
    dead: dict[str, tuple[str, bool]] | None = None,
) -> Counts:
    """Count the history in ``directory``; ``absent``: None when the topic was drained empty; ``dead``: the
    dead-letter stream, key -> (the id it had, intact) (see ``Target.dead_letters``).

    ``min_hold``: how long a claim surely stays leased after its recorded start (default ``lease``; less for
    consumers that record when a handler starts, after the claim: a Worker's renewals keep at least
    2/3 of the lease ahead of a held message, so ``lease / 2`` leaves room for a late renewal).
    """
    hold = lease if min_hold is None else min_hold
    counts = Counts(leftover=leftover, dead_lettered=None if dead is None else 0)
    dead = dead or {}
    by_proc: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for ev in read(directory):
        by_proc[ev['proc']].append(ev)
    pauses = _pauses(by_proc.get('test', []))
    crashes = _lossy_crashes(by_proc.get('test', []))
    history = _History(crashes)
    for proc, events in by_proc.items():
        history.process(proc, events, counts)
    outcome = history.outcome
    counts.published = sum(1 for v in outcome.values() if v == 'ok')
    counts.indeterminate = len(outcome) - counts.published
    for key, (dead_id, whole) in dead.items():
        if key not in outcome or not whole or dead_id != history.published_id.get(key, dead_id):
            counts.unexpected += 1
            counts.note('unexpected', key)
        elif counts.dead_lettered is not None:
            counts.dead_lettered += 1
    for key in outcome.keys() - history.deliveries.keys() - dead.keys():
        if outcome[key] == 'ok':
            counts.lost += 1
            counts.note('lost', key)
    for key, ds in history.deliveries.items():
        ordered = sorted(ds, key=lambda d: (d.n, d.t1))
        _check_key(counts, key, ordered, outcome, history.published_id, pauses, crashes, hold, absent, key in dead)
    return counts


def _check_key(
    counts: Counts,
    key: str,
    ds: list[Delivery],
    outcome: dict[str, str],
    published_id: dict[str, str],
    pauses: dict[str, list[tuple[float, float]]],
    crashes: list[float],
    lease: float,
    absent: set[str] | None,
    dead: bool,
) -> None:
    counts.delivered += len(ds)
    if key not in outcome or any(not d.intact or d.id != published_id.get(key, d.id) for d in ds):
        counts.unexpected += 1
        counts.note('unexpected', key)
        return
    if outcome[key] == 'unknown':
        counts.recovered += 1
    if len(ds) > 1:
        counts.duplicated += 1
    if any(d.n == nxt.n and not _lost_at_crash(d, nxt, crashes) for d, nxt in zip(ds, ds[1:])):
        counts.double_claims += 1
        counts.note('double_claims', key)
    # A commit acknowledged before a lossy crash that lost it with the unwritten AOF tail (and maybe the claim
    # before it: the next delivery has no higher count) is delivered and committed again.
    lost_commits = sum(d.commit == 'ok' and _lost_at_crash(d, nxt, crashes) for d, nxt in zip(ds, ds[1:]))
    if sum(d.commit == 'ok' for d in ds) - lost_commits + dead > 1:
        counts.double_commits += 1
        counts.note('double_commits', key)
    _redeliveries(counts, key, ds, pauses, crashes, lease)
    if not dead and not any(d.commit == 'ok' for d in ds):
        last = ds[-1]
        gone = absent is None or key in absent
        if last.commit in ('refused', 'error', 'sending', 'killed-sending') and gone:
            counts.commit_unknown += 1  # the commit ran, but its reply was lost or under-reported
        elif outcome[key] == 'ok':
            counts.lost += 1
            counts.note('lost', key)


def _redeliveries(
    counts: Counts,
    key: str,
    ds: list[Delivery],
    pauses: dict[str, list[tuple[float, float]]],
    crashes: list[float],
    lease: float,
) -> None:
    """Why each delivery after the first happened (``causes``), and the redeliveries that must not happen."""
    if ds[0].n > 1:
        counts.causes['unrecorded'] += 1
    for d, nxt in zip(ds, ds[1:]):
        if _lost_at_crash(d, nxt, crashes):
            counts.causes['crash'] += 1
            continue
        if nxt.n > d.n + 1:
            counts.causes['unrecorded'] += 1
        if nxt.t1 < d.t0 + lease - CLOCK_SLACK:
            counts.premature += 1
            counts.note('premature', f'{key} ({(d.t0 + lease - nxt.t1) * 1000:.1f} ms early)')
        if d.commit == 'ok':
            counts.unexplained += 1
            counts.note('unexplained', key)
        elif d.commit.startswith('killed'):
            counts.causes['kill'] += 1
        elif _paused(pauses, d.proc, d.t0, nxt.t1):
            counts.causes['pause'] += 1
        elif d.commit in ('refused', 'error'):
            counts.causes['expired'] += 1
        else:
            counts.unexplained += 1
            counts.note('unexplained', key)


# --- the final drain -----------------------------------------------------------------------------


def drain(url: str, r: Any, target: Target, directory: Path, lease: float, timeout: float = 30.0) -> int:
    """Claim and commit everything left (harvesting leases as they expire); returns what is still left."""
    from ferroq.pure import Client

    record = Recorder(directory, 'drain')
    record('start')
    deadline = time.monotonic() + timeout
    with Client(url, command_timeout=10.0) as client:
        queue = target.consumer(client, lambda fn, *args, **kwargs: fn(*args, **kwargs), 'drain')
        while time.monotonic() < deadline:
            t0 = time.monotonic()
            msgs = queue.harvest(lease)  # a Streams group's autoclaim returns what it took over
            if not msgs:
                t0 = time.monotonic()
                msgs = queue.claim(1000, None, 60.0)
            if msgs:
                record('claim', t0=t0, msgs=[delivery(m) for m in msgs])
                t0 = time.monotonic()
                done = queue.commit(msgs)
                record('commit', t0=t0, ids=[m.id for m in msgs], done=done)
                continue
            if target.waiting(r) == 0:
                break
            time.sleep(0.1)  # claims of dead consumers: wait for their leases to run out
    record('exit')
    record.close()
    return target.leftover(r)
