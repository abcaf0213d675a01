"""``python -m tokenbox_core.cli``: the ``tokenbox`` command."""

import sys

from tokenbox_core.cli import main

sys.exit(main())
