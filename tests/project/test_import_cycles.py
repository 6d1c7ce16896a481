"""The package's import graph has no cycles (imports for annotations only aside)."""

from __future__ import annotations

import grimp


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _graph() -> dict[str, set[str]]:
    graph = grimp.build_graph("toolwire", exclude_type_checking_imports=True, cache_dir=None)
    return {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}


def test_the_runtime_import_graph_has_no_cycle() -> None:
    """No chain of runtime imports inside toolwire leads back to where it started."""
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_planted_cycle() -> None:
    """The check is real: a cycle added to the package's graph is reported."""
    edges = _graph()
    edges["toolwire._core.framing"].add("toolwire._turn.run")
    cycles = _cycles(edges)
    assert any({"toolwire._core.framing", "toolwire._turn.run"} <= set(c) for c in cycles)


def test_no_module_imports_the_package_root() -> None:
    """Modules import what they use from its room, never from ``toolwire`` itself."""
    edges = _graph()
    assert [m for m, targets in edges.items() if m != "toolwire" and "toolwire" in targets] == []
