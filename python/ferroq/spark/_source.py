"""The ``ferroq`` data source: one class that Spark finds by name and asks for readers and writers."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)

from ferroq.exceptions import InvalidArgument
from ferroq.spark import _options
from ferroq.spark._rows import check_schema, default_schema

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

__all__ = ['FerroqDataSource']


class FerroqDataSource(DataSource):
    """Reads and writes rfq topics, RSMQ queues and Streams topics (``format('ferroq')``).

    Options are checked when a read or write is planned (see ``ferroq.spark._options.OPTIONS`` and the
    README): an unknown, misplaced or conflicting option fails the query before any task starts.
    """

    @classmethod
    def name(cls) -> str:
        return 'ferroq'

    def schema(self) -> StructType:
        """With no declared schema: every field of the first 100 messages as a string column, then
        ``_id``, ``_published``, ``_deliveries``, ``_topic``."""
        from ferroq.spark._read import sample

        plan = _options.parse(self.options, 'schema')
        rows = sample(plan)
        if not rows:
            raise InvalidArgument(
                f'{plan.target} is empty, so its fields cannot be guessed: declare them, e.g. '
                "spark.read.format('ferroq').schema('tile string, value double, _id string')"
            )
        return default_schema(rows)

    def reader(self, schema: StructType) -> DataSourceReader:
        from ferroq.spark import _read

        plan = _options.parse(self.options, 'read')
        check_schema(schema)
        return _read.reader(plan, schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        plan = _options.parse(self.options, 'stream_read')
        check_schema(schema)
        if plan.target.kind == 'topic':
            from ferroq.spark._topic_read import TopicReader

            return TopicReader(plan, schema)
        from ferroq.spark._stream_read import StreamsReader

        return StreamsReader(plan, schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from ferroq.spark._write import BatchWriter, check_columns

        _refuse_overwrite(overwrite)
        plan = _options.parse(self.options, 'write')
        check_columns(plan, schema)
        return BatchWriter(plan, uuid.uuid4().hex)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from ferroq.spark._write import StreamWriter, check_columns

        _refuse_overwrite(overwrite)
        plan = _options.parse(self.options, 'stream_write')
        check_columns(plan, schema)
        return StreamWriter(plan)


def _refuse_overwrite(overwrite: bool) -> None:
    if overwrite:
        raise InvalidArgument(
            'a queue cannot be overwritten: use mode("append") to publish the rows as new messages '
            '(to empty a topic first, purge it: ferroq purge -t TOPIC)'
        )
