"""Lets Spark find ferroq's data source by name: ``format('ferroq')`` with no register call.

Spark imports every top-level module named ``pyspark_*`` when a Python data source is first looked up, and
registers its ``DefaultSource``. One module that fails to import would abort that lookup for every source,
so this one never fails: without pyspark (or with a broken install) it simply exposes nothing.
"""

import contextlib

# Any failure (no pyspark, a broken install) must not break Spark's lookup of the other data sources.
with contextlib.suppress(Exception):
    from ferroq.spark import FerroqDataSource as DefaultSource  # noqa: F401
