"""Options of format('ferroq'): checked when a read or write is planned, before any task; no secret shown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import redis

import ferroq
from _redis import PASSWORD, RedisServer
from ferroq.exceptions import InvalidArgument, InvalidName
from ferroq.spark._options import OPTIONS, options_table, parse
from ferroq.spark._stream_read import StreamsReader

URL = 'redis://127.0.0.1:1/0'


@pytest.mark.parametrize(
    ('options', 'mode', 'message'),
    [
        ({'topic': 't', 'chunksize': '5'}, 'write', "unknown option 'chunksize'.*did you mean chunk_size"),
        ({'topic': 't', 'bogus': '1'}, 'read', "unknown option 'bogus'"),
        ({}, 'write', 'exactly one of the options topic, rsmq or stream'),
        ({'topic': 't', 'stream': 's'}, 'write', 'topic and stream conflict'),
        ({'topic': 't', 'sinkId': 'a'}, 'write', 'sinkId does not apply to batch writes'),
        ({'topic': 't', 'group': 'g'}, 'stream_read', 'group does not apply to a topic'),
        ({'stream': 's', 'idColumn': 'id'}, 'write', 'idColumn does not apply to a Streams topic'),
        ({'rsmq': 'q'}, 'stream_read', 'streaming reads take a topic or a stream'),
        ({'topic': 't', 'ns': 'x'}, 'write', 'option ns applies to an RSMQ queue'),
        ({'topic': 't', 'chunk_size': '0'}, 'write', r'chunk_size must be an integer 1\.\.100000'),
        ({'topic': 't', 'dedupTtl': '-1'}, 'write', 'dedupTtl must be a number of seconds > 0'),
        ({'topic': 't', 'claimTtl': '700000'}, 'stream_read', 'claimTtl must be a number of seconds > 0 and <= 604800'),
        ({'stream': 's', 'maxlen': '10', 'maxAge': '5'}, 'write', 'maxlen and maxAge conflict'),
        ({'stream': 's', 'startingPosition': 'yesterday'}, 'read', 'startingPosition must be earliest'),
        ({'stream': 's', 'startingPosition': 'latest'}, 'read', 'startingPosition of a batch read'),
        ({'stream': 's', 'failOnDataLoss': 'maybe'}, 'stream_read', 'failOnDataLoss must be true or false'),
        ({'topic': 't', 'valueColumn': 'v', 'idColumn': 'v'}, 'write', 'name the same column'),
        ({'topic': 't', 'url': 'http://x'}, 'write', 'invalid Redis URL'),
    ],
)
def test_bad_options_are_refused(options: dict[str, str], mode: Any, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        parse({'url': URL, **options}, mode)


def test_a_bad_name_is_the_clients_error() -> None:
    with pytest.raises(InvalidName, match='invalid topic name'):
        parse({'url': URL, 'topic': 'a b'}, 'write')


def test_options_are_case_insensitive_and_typed() -> None:
    plan = parse({'URL': URL, 'Stream': 's', 'MAXRECORDSPERTRIGGER': '7', 'failondataloss': 'False'}, 'stream_read')
    assert (plan.target.kind, plan.max_records_per_trigger, plan.fail_on_data_loss) == ('stream', 7, False)
    assert {o.name.lower() for o in OPTIONS} >= {'url', 'topic', 'rsmq', 'stream', 'sinkid', 'idcolumn'}


def test_the_password_never_shows() -> None:
    plan = parse({'url': 'redis://127.0.0.1:1/0', 'password': 'Sentinel-Pw-42', 'topic': 't'}, 'write')
    assert 'Sentinel-Pw-42' in plan.connection.url
    assert 'Sentinel-Pw-42' not in repr(plan)
    assert 'Sentinel-Pw-42' not in str(plan.connection.shown_url)
    with pytest.raises(InvalidArgument) as err:
        parse({'url': 'redis://:Sentinel-Pw-42@h:1/0', 'password': 'x', 'topic': 't'}, 'write')
    assert 'Sentinel-Pw-42' not in str(err.value)


def test_spark_refuses_bad_options_before_any_task(spark: Any, redis_url: str, r: redis.Redis) -> None:
    df = spark.range(10)
    with pytest.raises(Exception, match='unknown option .chunksize'):
        df.write.format('ferroq').option('url', redis_url).option('topic', 't').option('chunksize', '5').mode(
            'append'
        ).save()
    with pytest.raises(Exception, match='a queue cannot be overwritten'):
        df.write.format('ferroq').option('url', redis_url).option('topic', 't').mode('overwrite').save()
    with pytest.raises(Exception, match='no column .nope'):
        df.write.format('ferroq').option('url', redis_url).option('topic', 't').option('valueColumn', 'nope').mode(
            'append'
        ).save()
    assert r.dbsize() == 0


def test_credentials_stay_out_of_plans_and_errors(spark: Any, auth_server: RedisServer) -> None:
    url = f'redis://127.0.0.1:{auth_server.port}/0'
    with ferroq.Client(f'redis://:{PASSWORD}@127.0.0.1:{auth_server.port}/0') as c:
        c.stream('creds').publish({'a': '1'})
    df = (
        spark.read.format('ferroq')
        .option('url', url)
        .option('password', PASSWORD)
        .option('stream', 'creds')
        .schema('a string')
        .load()
    )
    assert [row.a for row in df.collect()] == ['1']
    plan = df._jdf.queryExecution().toString()
    assert PASSWORD not in plan
    bad = spark.read.format('ferroq').option('url', url).option('password', 'Wr0ng-Sentinel').option('stream', 'creds')
    with pytest.raises(Exception) as err:
        bad.schema('a string').load().collect()
    assert 'Wr0ng-Sentinel' not in str(err.value)
    assert 'authentication' in str(err.value)


def test_two_live_queries_with_one_consumer_are_refused(redis_url: str) -> None:
    from pyspark.sql.types import StringType, StructField, StructType

    schema = StructType([StructField('a', StringType())])
    plan = parse({'url': redis_url, 'stream': 'locked'}, 'stream_read')
    first, second = StreamsReader(plan, schema), StreamsReader(plan, schema)
    first.latestOffset(first.initialOffset(), None)
    with pytest.raises(
        InvalidArgument, match="another streaming query is reading Streams topic locked as consumer 'spark'"
    ):
        second.latestOffset({'id': '5-0'}, None)
    other = StreamsReader(parse({'url': redis_url, 'stream': 'locked', 'consumer': 'b'}, 'stream_read'), schema)
    other.latestOffset(other.initialOffset(), None)  # another consumer reads on its own
    first.stop()
    second.latestOffset({'id': '5-0'}, None)  # free once the first one stopped


def test_the_readme_lists_every_option() -> None:
    readme = (Path(__file__).resolve().parents[2] / 'README.md').read_text()
    block = readme.split('<!-- spark-options -->\n', 1)[1].split('<!-- /spark-options -->', 1)[0]
    assert block.strip() == options_table(), 'regenerate the block with ferroq.spark._options.options_table()'
