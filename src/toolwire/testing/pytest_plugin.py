"""The pytest plugin (entry point ``pytest11``): the ``toolwire_simulator`` fixture.

Registered by toolwire's package metadata, so any suite that installs toolwire can use::

    def test_agent_survives_a_cut(toolwire_simulator):
        toolwire_simulator.add_response(tool_calls=[("ls", {})], faults=["cut:0.5"])
        client = openai.OpenAI(base_url=toolwire_simulator.base_url("openai-chat"),
                               api_key="test")
        ...

The fixture is function-scoped: a fresh, started :class:`~toolwire.testing.Simulator` per
test (seed from ``--toolwire-seed``, default 0), stopped afterwards. Loading the plugin
imports nothing beyond pytest; the server stack (``toolwire[testing]``) is imported when the
fixture starts a simulator, and its absence is reported there, with the install command.
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
