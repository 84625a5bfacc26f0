"""Reads the Spark tests start: batch reads, and streaming queries into a foreachBatch sink."""

from __future__ import annotations

from typing import Any, Callable


def read_stream(
    spark: Any,
    url: str,
    options: dict[str, str],
    schema: str,
    sink: Callable[[Any, int], None],
    checkpoint: str,
    available_now: bool = True,
) -> Any:
    """Starts ``readStream.format('ferroq')`` with ``options`` into ``sink``; returns the running query."""
    reader = spark.readStream.format('ferroq').option('url', url)
    for key, value in options.items():
        reader = reader.option(key, value)
    writer = reader.schema(schema).load().writeStream.foreachBatch(sink).option('checkpointLocation', checkpoint)
    return writer.trigger(availableNow=True).start() if available_now else writer.start()


def drain(spark: Any, url: str, options: dict[str, str], schema: str, sink: Any, checkpoint: str) -> Any:
    """Runs an ``AvailableNow`` query to its end (at most 120 s); returns its last progress."""
    query = read_stream(spark, url, options, schema, sink, checkpoint)
    assert query.awaitTermination(120)
    return query.lastProgress


def peek(spark: Any, url: str, **options: str) -> Any:
    """``spark.read.format('ferroq')`` with ``url`` and ``options`` (a DataFrameReader: add a schema, load)."""
    reader = spark.read.format('ferroq').option('url', url)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader
