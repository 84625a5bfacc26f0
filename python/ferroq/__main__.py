"""``python -m ferroq``: the ``ferroq`` command."""

import sys

from ferroq.cli import main

sys.exit(main())
