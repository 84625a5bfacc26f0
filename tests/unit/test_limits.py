"""The limits are defined once, in the native core: ``ferroq._limits`` holds each of them, by the same name."""

from __future__ import annotations

import re
from pathlib import Path

from ferroq import _limits
from ferroq._ferroq import LIMITS


def test_every_limit_of_the_core_is_in_limits_with_its_value_and_kind() -> None:
    ours = {name: getattr(_limits, name) for name in dir(_limits) if re.fullmatch(r'(MAX|MIN)_[A-Z_]+', name)}
    assert ours == dict(LIMITS)
    assert all(type(ours[name]) is type(LIMITS[name]) for name in ours)


def test_nothing_else_defines_a_limit() -> None:
    package = Path(_limits.__file__).parent
    defined = re.compile(r'^(MAX|MIN)_[A-Z_]+\s*(:[^=]+)?=\s*[\d_.]+\s*$', re.MULTILINE)
    offenders = [str(p.relative_to(package)) for p in package.rglob('*.py') if defined.search(p.read_text())]
    assert offenders == []
