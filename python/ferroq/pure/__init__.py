"""The pure-Python client (redis-py): the reference implementation and the benchmark baseline.

It has the API of the native ``ferroq.Client`` / ``ferroq.AsyncClient``, sends the same scripts with the
same keys and arguments (so Redis ends in the same state), and raises the same :mod:`ferroq.exceptions`.

>>> from ferroq.pure import Client
>>> with Client('redis://127.0.0.1:6379/0') as client:   # doctest: +SKIP
...     client.topic('jobs').publish({'tile': 'T32UNE'})
"""

from __future__ import annotations

from ferroq.pure import async_client, client
from ferroq.pure.async_client import *
from ferroq.pure.client import *

# Each module lists its own classes (its ``__all__``); the package exports both lists.
__all__: list[str] = []
__all__ += client.__all__
__all__ += async_client.__all__
