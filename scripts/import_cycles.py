"""`make check`'s proof that a package's modules import each other in no circle.

import-linter's own contracts see circles between sibling packages only; this walks every
module of the package (imports under `if TYPE_CHECKING:` and inside functions included, since
they tie modules together too) and fails on any strongly connected set of two or more, printing
each with one circle through it.

    python scripts/import_cycles.py capstan_sandbox
"""

from __future__ import annotations

import sys

import grimp


def circles(package: str) -> list[list[str]]:
    graph = grimp.build_graph(package, cache_dir=None)
    modules = sorted(graph.modules)
    imports = {
        m: sorted(graph.find_modules_directly_imported_by(m) & graph.modules) for m in modules
    }
    # Tarjan's strongly connected components, without recursion.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in modules:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            module, position = work.pop()
            if position == 0:
                index[module] = low[module] = len(index)
                stack.append(module)
                on_stack.add(module)
            for offset, imported in enumerate(imports[module][position:], position):
                if imported not in index:
                    work += [(module, offset + 1), (imported, 0)]
                    break
                if imported in on_stack:
                    low[module] = min(low[module], index[imported])
            else:
                if low[module] == index[module]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == module:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[module])
    return found


def main(package: str) -> int:
    found = circles(package)
    for component in found:
        print(f"{package}: {len(component)} modules import each other in a circle:")
        for module in component:
            print(f"    {module}")
    if not found:
        print(f"{package}: no import circle")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
