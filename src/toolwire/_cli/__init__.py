"""The ``toolwire`` command: argparse subcommands over the public API (``main`` in
:mod:`.main`; each subcommand a module, the demo a sub-room of its own)."""
