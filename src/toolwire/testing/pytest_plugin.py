"""The pytest plugin (entry point ``pytest11``): the ``toolwire_simulator`` fixture.

A fresh, started :class:`~toolwire.testing.Simulator` per test (seed from
``--toolwire-seed``); loading the plugin imports nothing beyond pytest.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from ._simulator import Simulator

__all__ = ["pytest_addoption", "toolwire_simulator"]


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--toolwire-seed`` (the seed of every ``toolwire_simulator``)."""
    group = parser.getgroup("toolwire")
    group.addoption(
        "--toolwire-seed",
        type=int,
        default=0,
        help="seed of the toolwire_simulator fixture (default 0)",
    )


@pytest.fixture
def toolwire_simulator(request: pytest.FixtureRequest) -> Iterator[Simulator]:
    """A started provider simulator on 127.0.0.1 and a free port, stopped after the test."""
    from ._simulator import Simulator

    seed = request.config.getoption("--toolwire-seed", default=0)
    with Simulator(seed=int(seed)) as simulator:
        yield simulator
