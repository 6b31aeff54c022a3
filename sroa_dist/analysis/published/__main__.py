"""``python -m sroa_dist.analysis.published [ROOT] [--check] [--figures]``."""

import sys

from . import main

sys.exit(main())
