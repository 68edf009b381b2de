"""``python -m srnet.cli``: the ``srnet`` command."""

import sys

from srnet.cli import main

sys.exit(main())
