"""The checker's own rules, on made-up histories (no server)."""

from __future__ import annotations

from pathlib import Path

from _fault_check import LOSSY_WINDOW, Counts, Delivery, _check_key
from _fault_history import Recorder, read

CRASH = 100.0
LEASE = 30.0


def _counts(first: Delivery, again: Delivery) -> Counts:
    counts = Counts()
    _check_key(counts, 'k', [first, again], {'k': 'ok'}, {'k': 'id'}, {}, [CRASH], LEASE, None, False)
    return counts


def _committed_before_crash(seconds: float, next_count: int) -> Counts:
    """A delivery committed ``seconds`` before a lossy crash, then the message delivered and committed again."""
    first = Delivery('c0', 'k', 'id', 1, 80.0, 80.1, True, 'ok', CRASH - seconds)
    again = Delivery('c1', 'k', 'id', next_count, 140.0, 140.1, True, 'ok', 141.0)
    return _counts(first, again)


def test_a_commit_acknowledged_just_before_a_lossy_crash_may_be_lost_without_its_claim():
    # The claim was written, the commit was not (an AOF write postponed by a slow fsync): the lease ran out.
    counts = _committed_before_crash(1.0, next_count=2)
    assert (counts.double_commits, counts.unexplained, counts.causes['crash']) == (0, 0, 1)


def test_a_commit_lost_with_its_claim_at_a_lossy_crash_is_excused():
    counts = _committed_before_crash(LOSSY_WINDOW + 10, next_count=1)
    assert (counts.double_commits, counts.unexplained, counts.causes['crash']) == (0, 0, 1)


def test_a_commit_acknowledged_long_before_a_lossy_crash_counts_twice():
    counts = _committed_before_crash(LOSSY_WINDOW + 10, next_count=2)
    assert (counts.double_commits, counts.unexplained) == (1, 1)


def test_a_redelivery_after_a_commit_with_no_crash_is_unexplained():
    first = Delivery('c0', 'k', 'id', 1, 200.0, 200.1, True, 'ok', 201.0)
    again = Delivery('c1', 'k', 'id', 2, 240.0, 240.1, True, 'ok', 241.0)
    counts = _counts(first, again)
    assert (counts.double_commits, counts.unexplained, counts.causes['crash']) == (1, 1, 0)


def test_a_history_line_cut_short_by_a_kill_is_not_read(tmp_path: Path) -> None:
    # A SIGKILL stops a write of more than a page between pages: the killed process's last line ends early.
    record = Recorder(tmp_path, 'c0')
    record('claim', msgs=[['k', 'id', 1, True]])
    record.close()
    with (tmp_path / 'c0.jsonl').open('a') as f:
        f.write('{"ev":"commit')
    assert [ev['ev'] for ev in read(tmp_path)] == ['claim']
