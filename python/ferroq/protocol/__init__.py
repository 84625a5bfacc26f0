"""The wire protocols: key layout (:mod:`ferroq.protocol.keys`) and the Lua scripts.

Every script lives once, as ``lua/<protocol>/<op>-<numkeys>.lua`` (``n`` in the key count means "one
more key per item"), sent after the helpers of the shared prelude ``lua/prelude.lua`` that it uses. The Rust
core embeds the same files with ``include_str!`` and assembles them the same way (``src/scripts.rs``); the pure
client loads them from here. ``script_hashes()`` must equal ``ferroq._ferroq.script_hashes()``.
"""

from __future__ import annotations

import hashlib
import re
from functools import cache, lru_cache
from importlib import resources

__all__ = ['script_hashes', 'script_names', 'script_source', 'with_helpers']


#: Script folders with no Rust twin: ``peers/`` holds other projects' scripts (benchmark baselines), ``spark/``
#: the Spark connector's own scripts, which only :mod:`ferroq.spark` sends (through redis-py), ``previous/`` the
#: previous release's claim script and prelude, verbatim, which only the migration tests send, ``fixtures/`` the
#: tests' Lua texts, never sent (neither of the two is in the wheel).
PYTHON_ONLY = ('fixtures', 'peers', 'previous', 'spark')


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
    """The source of one script as sent to Redis (the prelude's helpers it uses, then the script), by
    ``<protocol>/<op>-<numkeys>`` name."""
    proto, op = name.split('/')
    lua = resources.files(__package__) / 'lua'
    return with_helpers(
        lua.joinpath('prelude.lua').read_text(encoding='utf-8'), (lua / proto / f'{op}.lua').read_text(encoding='utf-8')
    )


#: A top-level definition of the prelude: ``local function name(`` or ``local name =``.
_DEFINITION = re.compile(r'^local (?:function )?([A-Za-z_][A-Za-z0-9_]*)', re.MULTILINE)
_COMMENT = re.compile(r'--\[\[.*?\]\]|--[^\n]*', re.DOTALL)
#: A line with its ``\n`` (the last one may lack it): only ``\n`` ends a line, as in the Rust twin.
_LINE = re.compile(r'[^\n]*\n|[^\n]+')
#: A word of code: a name is used where a whole word equals it (not where it is part of a longer one).
_WORD = re.compile(r'[A-Za-z0-9_]+')


def with_helpers(prelude: str, script: str) -> str:
    """``script`` after the prelude's blocks that it uses, directly or through another block, in the prelude's
    order. Redis runs a script's whole text at every call, and each function defined there is a closure made
    anew: the whole prelude before every script cost redis-server 12,000-14,000 instructions per call (a
    single publish's script call made 69,000 in all), counted with callgrind.

    A block starts, after an empty line (or at the file's first line), at a line that begins with ``--`` or
    ``local ``, and runs to the next; it is used when its code (comments left out) or the script's names one
    of its definitions. Blocks of comments only (the prelude's notes) are never sent. The Rust twin is
    ``scripts::with_helpers``: both must give the same text, since the SHA is the script's name on the server.
    """
    blocks = _prelude_blocks(prelude)
    used = [False] * len(blocks)
    words = _words(script)
    found = True
    while found:
        found = False
        for k, (_, names, block_words) in enumerate(blocks):
            if not used[k] and not words.isdisjoint(names):
                used[k] = found = True
                words |= block_words
    return ''.join(text for (text, _, _), u in zip(blocks, used) if u) + script


@lru_cache(maxsize=4)
def _prelude_blocks(prelude: str) -> tuple[tuple[str, frozenset[str], frozenset[str]], ...]:
    """The prelude's blocks (see :func:`with_helpers`), each with the names it defines and the words of its code:
    cut once per prelude, not once per script (every script's SHA is computed at import)."""
    lines = _LINE.findall(prelude)
    starts = [
        i for i, line in enumerate(lines) if line.startswith(('--', 'local ')) and (i == 0 or not lines[i - 1].strip())
    ]
    texts = [''.join(lines[a:b]) for a, b in zip(starts, [*starts[1:], len(lines)])]
    return tuple((text, frozenset(_DEFINITION.findall(text)), frozenset(_words(text))) for text in texts)


def _words(code: str) -> set[str]:
    """The words of ``code`` with its comments left out."""
    return set(_WORD.findall(_COMMENT.sub('', code)))


def script_hashes() -> dict[str, str]:
    """SHA1 (as used by EVALSHA) of every script, by name."""
    return {name: hashlib.sha1(script_source(name).encode()).hexdigest() for name in script_names()}
