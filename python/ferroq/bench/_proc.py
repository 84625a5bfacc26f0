"""Machine-wide CPU accounting, standard library only: also imported by ``_rfq_runner`` in rfq's own venv."""

from __future__ import annotations

import os

__all__ = ['machine_busy']


def machine_busy() -> float | None:
    """CPU seconds all processes of the machine have used since boot (Linux /proc/stat), else None."""
    try:
        with open('/proc/stat', encoding='ascii') as f:
            ticks = [int(x) for x in f.readline().split()[1:]]
        # user nice system idle iowait irq softirq steal ...: everything but idle and iowait is busy
        return (sum(ticks[:8]) - ticks[3] - ticks[4]) / os.sysconf('SC_CLK_TCK')
    except (OSError, ValueError, IndexError, AttributeError):
        return None
