"""PySpark data source for ferroq: ``format('ferroq')`` reads and writes rfq topics, RSMQ queues and Streams.

After ``pip install "ferroq[spark]"`` Spark finds the source by name (the top-level module
``pyspark_ferroq`` exposes it), with no register call::

    df.write.format('ferroq').option('url', url).option('topic', 'tiles').mode('append').save()
    spark.read.format('ferroq').option('url', url).option('topic', 'tiles').load()          # a peek
    spark.readStream.format('ferroq').option('url', url).option('stream', 'events').load()  # acked on commit

Needs pyspark >= 4.2 and pyarrow. The README's Spark section lists every option and the delivery guarantee
of each mode.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ferroq.spark._admin import release
from ferroq.spark._options import OPTIONS

if TYPE_CHECKING:
    from ferroq.spark._source import FerroqDataSource

__all__ = ['OPTIONS', 'FerroqDataSource', 'release']


def __getattr__(name: str) -> Any:
    # The data source class needs pyspark: imported on first use, so `release` and the CLI work without it.
    if name == 'FerroqDataSource':
        from ferroq.spark._source import FerroqDataSource

        return FerroqDataSource
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
