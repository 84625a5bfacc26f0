"""``ferroq metrics``: the figures of ``ferroq top`` in Prometheus' text format (``prometheus-client``).

Every scrape reads Redis afresh (:class:`ferroq._figures.Sampler`); rates are over the time since the previous
scrape. A scrape that cannot read Redis answers ``ferroq_up 0`` and no queue metrics. The metric list is
:data:`METRICS` (the README shows the same).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ferroq._figures import Sampler, Snapshot
from ferroq.exceptions import FerroqError, InvalidArgument

__all__ = ['METRICS', 'FiguresCollector', 'serve']

_QUEUE = ('kind', 'queue')
_GROUP = ('stream', 'group')

#: name -> (type, labels, help). Queue metrics are labelled kind (topic, rsmq, stream) and queue (RSMQ:
#: ``<ns>:<queue>``); group metrics stream and group. A figure that does not apply to a kind is left out.
METRICS: dict[str, tuple[str, tuple[str, ...], str]] = {
    'ferroq_up': ('gauge', (), '1 when the last scrape read Redis, else 0'),
    'ferroq_read_seconds': ('gauge', (), 'seconds the last scrape spent reading Redis'),
    'ferroq_queue_depth': ('gauge', _QUEUE, 'messages waiting (rfq backlog, visible RSMQ messages, stream length)'),
    'ferroq_queue_in_flight': ('gauge', _QUEUE,
                               'claimed, not committed (rfq nextlog, hidden RSMQ messages, pending stream entries)'),
    'ferroq_queue_expired_leases': ('gauge', _QUEUE, 'claims whose lease ran out, not harvested yet (rfq)'),
    'ferroq_queue_delayed': ('gauge', _QUEUE, 'messages released with a delay, not due yet (rfq)'),
    'ferroq_queue_dead_letters': ('gauge', _QUEUE, 'messages in the dead-letter topic, queue or stream'),
    'ferroq_queue_oldest_age_seconds': ('gauge', _QUEUE, 'age of the oldest message waiting or claimed'),
    'ferroq_queue_lag': ('gauge', _QUEUE, 'largest lag of the consumer groups of a stream'),
    'ferroq_queue_publish_rate': ('gauge', _QUEUE, 'messages published per second since the previous scrape'),
    'ferroq_queue_commit_rate': ('gauge', _QUEUE, 'messages committed per second since the previous scrape'),
    'ferroq_queue_published': ('counter', _QUEUE,
                               'messages published, as the server counts them (RSMQ totalsent, stream entries-added)'),
    'ferroq_group_consumers': ('gauge', _GROUP, 'consumers of a consumer group'),
    'ferroq_group_pending': ('gauge', _GROUP, 'entries delivered to a group and not acknowledged'),
    'ferroq_group_lag': ('gauge', _GROUP, 'entries of the stream the group has not read yet'),
    'ferroq_group_entries_read': ('counter', _GROUP, 'entries the group has read'),
    'ferroq_group_commit_rate': ('gauge', _GROUP, 'entries acknowledged per second since the previous scrape'),
}  # fmt: skip


def _family(name: str) -> GaugeMetricFamily | CounterMetricFamily:
    kind, labels, text = METRICS[name]
    if kind == 'counter':
        return CounterMetricFamily(name, text, labels=labels)  # exposed as <name>_total
    return GaugeMetricFamily(name, text, labels=labels)


def _metrics(snapshot: Snapshot | None, seconds: float) -> list[Metric]:
    families = {name: _family(name) for name in METRICS}
    families['ferroq_up'].add_metric([], 1.0 if snapshot is not None else 0.0)
    families['ferroq_read_seconds'].add_metric([], seconds)
    for q in snapshot.queues if snapshot is not None else []:
        labels = [q.kind, q.name]
        for name, value in (
            ('ferroq_queue_depth', q.depth),
            ('ferroq_queue_in_flight', q.in_flight),
            ('ferroq_queue_expired_leases', q.expired),
            ('ferroq_queue_delayed', q.delayed),
            ('ferroq_queue_dead_letters', q.dead_letters),
            ('ferroq_queue_oldest_age_seconds', q.oldest_age),
            ('ferroq_queue_lag', q.lag),
            ('ferroq_queue_publish_rate', q.publish_rate),
            ('ferroq_queue_commit_rate', q.commit_rate),
            ('ferroq_queue_published', q.published_total),
        ):
            if value is not None:
                families[name].add_metric(labels, float(value))
        for g in q.groups:
            for name, value in (
                ('ferroq_group_consumers', g.consumers),
                ('ferroq_group_pending', g.pending),
                ('ferroq_group_lag', g.lag),
                ('ferroq_group_entries_read', g.entries_read),
                ('ferroq_group_commit_rate', g.commit_rate),
            ):
                if value is not None:
                    families[name].add_metric([q.name, g.name], float(value))
    return list(families.values())


class FiguresCollector(Collector):
    """A prometheus-client collector that reads every queue's figures at each scrape."""

    def __init__(self, sampler: Sampler) -> None:
        self._sampler = sampler
        self._lock = threading.Lock()  # the HTTP server answers scrapes in threads; a Sampler reads one at a time

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            started = time.monotonic()
            try:
                snapshot: Snapshot | None = self._sampler.read()
            except FerroqError:
                snapshot = None
            yield from _metrics(snapshot, time.monotonic() - started)


def serve(url: str | None, port: int, bind: str) -> int:
    """``ferroq metrics``: serve ``/metrics`` on ``bind:port`` (0: a free port) until interrupted."""
    if isinstance(port, bool) or not 0 <= port <= 65535:
        raise InvalidArgument(f'--port must be from 0 to 65535, got {port}')
    with Sampler(url) as sampler:
        sampler.read()  # fails now, with the client's error, when Redis cannot be reached
        registry = CollectorRegistry(auto_describe=False)
        registry.register(FiguresCollector(sampler))
        try:
            server, thread = start_http_server(port, addr=bind, registry=registry)
        except OSError as exc:
            raise FerroqError(f'cannot listen on {bind}:{port}: {exc.strerror or exc}') from None
        print(f'serving metrics of {sampler.url} on http://{bind}:{server.server_port}/metrics', flush=True)
        try:
            while thread.is_alive():
                thread.join(timeout=3600)
        finally:
            server.shutdown()
    return 0
