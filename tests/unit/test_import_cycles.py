"""No module of fabriclens imports itself back through others, counting imports inside
functions: a circle makes import order matter and hides what a module depends on. Imports under
``if TYPE_CHECKING:`` run only for the type checker and are not counted."""

from __future__ import annotations

import grimp


def test_no_import_cycles() -> None:
    graph = grimp.build_graph("fabriclens", exclude_type_checking_imports=True)
    cycles = set()
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            chain = graph.find_shortest_chain(importer=imported, imported=module)
            if chain:
                cycles.add(" -> ".join((module, *chain)))
    assert not cycles, "import cycles:\n" + "\n".join(sorted(cycles))
