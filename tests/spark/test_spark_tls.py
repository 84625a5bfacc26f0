"""The Spark source over TLS with a client certificate (mTLS): a batch write, a batch read and an ACL user."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis

from _tls import Pki, TlsRedisServer, make_pki
from ferroq.acl import setuser

pytest.importorskip('cryptography', reason='the TLS tests need cryptography (the dev extra)')


@pytest.fixture(scope='module')
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TlsRedisServer, Pki]]:
    pki = make_pki(tmp_path_factory.mktemp('spark-pki'))
    server = TlsRedisServer(tmp_path_factory.mktemp('spark-redis-tls'), pki)
    yield server, pki
    server.stop()


def test_write_and_read_over_mtls_as_a_producer(spark: Any, tls_server: tuple[TlsRedisServer, Pki], tmp_path) -> None:
    server, pki = tls_server
    files = {
        'tls_ca_file': str(pki.ca),
        'tls_cert_file': str(pki.cert('client')),
        'tls_key_file': str(pki.key('client')),
    }
    password_file = tmp_path / 'password'
    password_file.write_text('spark-Pa55\n')
    raw = redis.Redis(
        host='127.0.0.1', port=server.port, ssl=True, ssl_ca_certs=str(pki.ca), ssl_certfile=files['tls_cert_file'],
        ssl_keyfile=files['tls_key_file'], decode_responses=True,
    )  # fmt: skip
    raw.flushall()
    raw.execute_command(*setuser('spark-producer', 'producer', 'rfq', 'tiles', password='spark-Pa55'))
    df = spark.range(0, 1000, numPartitions=2).selectExpr('cast(id as string) as n')
    writer = df.write.format('ferroq').option('url', server.url).option('topic', 'tiles').mode('append')
    writer = writer.option('username', 'spark-producer').option('password_file', str(password_file))
    for k, v in files.items():
        writer = writer.option(k, v)
    writer.save()
    assert raw.llen('rfq:tiles:backlog') == 1000
    reader = spark.read.format('ferroq').option('url', server.url).option('topic', 'tiles')
    for k, v in files.items():
        reader = reader.option(k, v)
    assert reader.load().count() == 1000
    # Without the CA the executors fail the handshake; the job fails with the TLS error.
    bad = df.write.format('ferroq').option('url', server.url).option('topic', 'tiles').mode('append')
    bad = bad.option('tls_cert_file', files['tls_cert_file']).option('tls_key_file', files['tls_key_file'])
    with pytest.raises(Exception, match='not signed by a trusted CA'):
        bad.save()
    assert raw.llen('rfq:tiles:backlog') == 1000
    raw.execute_command('ACL', 'DELUSER', 'spark-producer')
    raw.close()
