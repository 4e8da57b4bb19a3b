"""``python -m pytest_scorewright.cli``."""

import sys

from pytest_scorewright.cli import main

sys.exit(main())
