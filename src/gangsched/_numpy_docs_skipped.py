"""Import numpy without the two modules that only write its docstrings: what the `gangsched` command does.

The last thing numpy's `_core` package does when imported is to import `_add_newdocs` and
`_add_newdocs_scalars`: some 7,500 lines that give numpy's C-implemented functions, types and methods their
`__doc__` (and ndarray's methods their `__text_signature__`), one `add_newdoc` call each. That is about 49M
instructions, a seventh of importing numpy (8-10 ms of CPU on this project's machine), at every start of
every command, for docstrings a command line never shows. numpy itself says of the scalar one that its
documentation build mocks it out, and under `python -OO` numpy's C `add_docstring` ignores every one of those
calls: numpy with these docstrings unset is a configuration numpy runs in, and gangsched reads no
docstring or signature of numpy's.

`skipping_numpy_docs()` puts a finder first on `sys.meta_path` for as long as its block lasts (entry.py:
the CLI's import, which imports numpy); the finder answers for those two module names only, with an empty
module. Nothing happens when numpy is already imported; programs and tests that import gangsched themselves
get numpy as usual.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from importlib.abc import Loader

__all__ = ["DOCS_ONLY", "skipping_numpy_docs"]

#: numpy 2's modules that only set docstrings of objects defined in C (numpy/_core/__init__.py imports them).
DOCS_ONLY = frozenset({"numpy._core._add_newdocs", "numpy._core._add_newdocs_scalars"})


class _EmptyDocsModules:
    """Finder and loader of DOCS_ONLY: each is found here, and made an empty module."""

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: Any = None
    ) -> ModuleSpec | None:
        # self is a loader (create_module, exec_module) without importlib.abc's base class, whose module
        # the command would otherwise import for this alone
        return ModuleSpec(name, cast("Loader", self)) if name in DOCS_ONLY else None

    def create_module(self, spec: ModuleSpec) -> None:
        return None  # the default module object

    def exec_module(self, module: ModuleType) -> None:
        pass


@contextmanager
def skipping_numpy_docs() -> Iterator[None]:
    """numpy, if imported inside the block, is imported without its docstrings (see the module)."""
    if "numpy" in sys.modules:
        yield
        return
    finder = _EmptyDocsModules()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
