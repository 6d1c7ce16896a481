"""``python -m toolwire``: the same as the ``toolwire`` command."""

from __future__ import annotations

from ._cli.main import main

raise SystemExit(main())
