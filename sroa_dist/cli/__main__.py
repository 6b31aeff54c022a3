"""``python -m sroa_dist.cli``: the ``sroa-dist`` command."""

import sys

from . import main

sys.exit(main())
