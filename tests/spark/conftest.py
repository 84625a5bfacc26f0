"""A real local[2,2] SparkSession (2 cores; a failed task is retried once) for the Spark data source tests.

pyspark and Java are installed by the Makefile; the session starts once per test run (about 10 s) and its
Python workers run this interpreter, which has the wheel installed.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip('pyspark', reason='pyspark is installed by `make setup`; run the Spark tests through make')

LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


@pytest.fixture(scope='session')
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    conf_dir = tmp_path_factory.mktemp('spark-conf')
    (conf_dir / 'log4j2.properties').write_text(LOG4J)
    work = tmp_path_factory.mktemp('spark-work')
    mp = pytest.MonkeyPatch()
    mp.setenv('PYSPARK_PYTHON', sys.executable)  # else the workers run whatever python3 is on PATH
    mp.setenv('PYSPARK_DRIVER_PYTHON', sys.executable)
    mp.setenv('SPARK_LOCAL_IP', '127.0.0.1')
    mp.setenv('SPARK_CONF_DIR', str(conf_dir))
    # Python workers start in the driver's working directory: a clean one, so no module there shadows another.
    mp.chdir(work)
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master('local[2,2]')  # [cores, maxFailures]: plain local[2] never retries a task
        .appName('ferroq-tests')
        .config('spark.driver.host', '127.0.0.1')
        .config('spark.driver.bindAddress', '127.0.0.1')
        .config('spark.ui.enabled', 'false')
        .config('spark.ui.showConsoleProgress', 'false')
        .config('spark.sql.shuffle.partitions', '2')
        .config('spark.default.parallelism', '2')
        .config('spark.driver.memory', '1g')
        .config('spark.sql.session.timeZone', 'UTC')
        .config('spark.driver.extraJavaOptions', '-XX:TieredStopAtLevel=1 -XX:+UseSerialGC')
        .getOrCreate()
    )
    session.sparkContext.setLogLevel('ERROR')
    yield session
    session.stop()
    mp.undo()


@pytest.fixture
def checkpoint(tmp_path: Path) -> str:
    return str(tmp_path / 'checkpoint')
