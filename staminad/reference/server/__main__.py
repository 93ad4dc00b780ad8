"""`python3 -m refserver --config config.json --port N`: serve a design until interrupted."""

from __future__ import annotations

import sys

from .handler import main

sys.exit(main())
