"""Makes ``docs`` a package so that pytest imports ``docs/conftest.py`` as
``docs.conftest``: a second top-level ``conftest`` module would replace ``tests/conftest``
in ``sys.modules``, and the tests that ``from conftest import ...`` would read this one."""
