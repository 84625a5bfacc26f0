"""The wire protocols: key layout (:mod:`ferroq.protocol.keys`) and the Lua scripts.

Every script lives once, as ``lua/<protocol>/<op>-<numkeys>.lua`` (``n`` in the key count means "one
more key per item"), sent after the shared prelude ``lua/prelude.lua``. The Rust core embeds the same files with ``include_str!``; the pure client loads
them from here. ``script_hashes()`` must equal ``ferroq._ferroq.script_hashes()``.
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib import resources

__all__ = ['script_hashes', 'script_names', 'script_source']


#: Script folders with no Rust twin: ``peers/`` holds other projects' scripts (benchmark baselines), ``spark/``
#: the Spark connector's own scripts, which only :mod:`ferroq.spark` sends (through redis-py), ``previous/`` the
#: previous release's claim script and prelude, verbatim, which only the migration tests send (not in the wheel).
PYTHON_ONLY = ('peers', 'previous', 'spark')


@cache
def script_names() -> tuple[str, ...]:
    """Every script as ``<protocol>/<file name without .lua>``, sorted."""
    root = resources.files(__package__) / 'lua'
    names: list[str] = []
    for proto in root.iterdir():
        if proto.is_dir() and proto.name not in PYTHON_ONLY:
            names.extend(f'{proto.name}/{f.name[:-4]}' for f in proto.iterdir() if f.name.endswith('.lua'))
    return tuple(sorted(names))


@cache
def script_source(name: str) -> str:
    """The source of one script as sent to Redis (the prelude, then the script), by ``<protocol>/<op>-<numkeys>``
    name."""
    proto, op = name.split('/')
    lua = resources.files(__package__) / 'lua'
    return (lua / 'prelude.lua').read_text(encoding='utf-8') + (lua / proto / f'{op}.lua').read_text(encoding='utf-8')


def script_hashes() -> dict[str, str]:
    """SHA1 (as used by EVALSHA) of every script, by name."""
    return {name: hashlib.sha1(script_source(name).encode()).hexdigest() for name in script_names()}
