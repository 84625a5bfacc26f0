"""pyarrow is optional: importing ferroq never loads it, and the pure client explains how to get it."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, '-c', textwrap.dedent(code)], check=False, capture_output=True, text=True, timeout=60
    )


def test_importing_ferroq_does_not_import_pyarrow():
    proc = _run(
        """
        import sys
        import ferroq, ferroq.pure, ferroq.pure._arrow, ferroq.worker, ferroq.cli
        assert 'pyarrow' not in sys.modules, 'pyarrow was imported'
        """
    )
    assert proc.returncode == 0, proc.stderr


def test_pure_publish_arrow_without_pyarrow_names_the_package():
    proc = _run(
        """
        import sys
        sys.modules['pyarrow'] = None  # as if it were not installed
        import ferroq.pure
        from ferroq.exceptions import InvalidArgument
        c = ferroq.pure.Client('redis://127.0.0.1:1')
        try:
            c.topic('t').publish_arrow(object())
        except InvalidArgument as exc:
            print(exc)
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == 'publish_arrow needs pyarrow, which is not installed: pip install pyarrow'
