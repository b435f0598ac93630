"""``python -m mlnb_entry ...``: the ``mlnb`` command without its installed script."""

import sys

from mlnb_entry import main

sys.exit(main())
