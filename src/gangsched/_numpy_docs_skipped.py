"""Import numpy without the modules that only write its docstrings or its typing aliases: what the `gangsched`
command does.

The last thing numpy's `_core` package does when imported is to import `_add_newdocs` and
`_add_newdocs_scalars`: some 7,500 lines that give numpy's C-implemented functions, types and methods their
`__doc__` (and ndarray's methods their `__text_signature__`), one `add_newdoc` call each. That is about 49M
instructions, a seventh of importing numpy (8-10 ms of CPU on this project's machine), at every start of
every command, for docstrings a command line never shows. numpy itself says of the scalar one that its
documentation build mocks it out, and under `python -OO` numpy's C `add_docstring` ignores every one of those
calls: numpy with these docstrings unset is a configuration numpy runs in, and gangsched reads no
docstring or signature of numpy's.

numpy's typing aliases (`numpy._typing`: ArrayLike, DTypeLike and the other unions behind numpy.typing,
about 50M instructions, 8-10 ms) are imported by `import numpy` for one name, NDArray, which numpy.linalg
writes into the annotations of its result tuples (EigResult and four more). The command's modules import
numpy.typing only for the type checker. So while the block lasts `numpy._typing` is a stand-in that holds
NDArray alone, made as numpy makes it (`ndarray[tuple[Any, ...], dtype[_ScalarT]]`: linalg's annotations
are equal to numpy's own), and the block's end takes the stand-in out of `sys.modules` and of numpy's
namespace: whoever imports numpy.typing or numpy._typing later gets numpy's own. A numpy whose import reads
more of numpy._typing than NDArray (another version's) gets numpy's own at once: asked for any other name,
the stand-in gives its place to numpy's module (and it is a package over numpy's folder, so that a
submodule imports as usual).

`skipping_numpy_extras()` puts a finder first on `sys.meta_path` for as long as its block lasts (entry.py:
the CLI's import, which imports numpy); the finder answers for those three module names only. Nothing
happens when numpy is already imported; programs and tests that import gangsched themselves get numpy as
usual.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib.machinery import ModuleSpec, PathFinder
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar, cast

if TYPE_CHECKING:
    from importlib.abc import Loader

__all__ = ["DOCS_ONLY", "TYPING", "skipping_numpy_extras"]

#: numpy 2's modules that only set docstrings of objects defined in C (numpy/_core/__init__.py imports them).
DOCS_ONLY = frozenset({"numpy._core._add_newdocs", "numpy._core._add_newdocs_scalars"})
#: numpy's typing aliases; numpy.linalg imports NDArray from it.
TYPING = "numpy._typing"


class _NumpyExtras:
    """Finder and loader of DOCS_ONLY, made empty modules, and of TYPING, made a module of NDArray alone."""

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: Any = None
    ) -> ModuleSpec | None:
        # self is a loader (create_module, exec_module) without importlib.abc's base class, whose module
        # the command would otherwise import for this alone
        if name in DOCS_ONLY:
            return ModuleSpec(name, cast("Loader", self))
        if name != TYPING or self.typing_given_up:
            return None
        whole = PathFinder.find_spec(name, path)
        if whole is None:
            return None
        spec = ModuleSpec(name, cast("Loader", self), is_package=True)
        spec.submodule_search_locations = whole.submodule_search_locations
        return spec

    typing_stand_in: ModuleType | None = None
    typing_given_up = False

    def create_module(self, spec: ModuleSpec) -> None:
        return None  # the default module object

    def exec_module(self, module: ModuleType) -> None:
        if module.__name__ == TYPING:  # numpy/__init__.py imports linalg after numpy._core
            import numpy as np

            module.NDArray = _nd_array(np)  # type: ignore[attr-defined]
            module.__getattr__ = self._whole_typing  # type: ignore[method-assign]
            self.typing_stand_in = module

    def _whole_typing(self, name: str) -> Any:
        """The stand-in's other names: numpy's own module takes its place, and gives the name."""
        if name.startswith("__"):  # what the import system and inspect probe for
            raise AttributeError(name)
        self.typing_given_up = True
        del sys.modules[TYPING]
        whole = importlib.import_module(TYPING)
        sys.modules["numpy"]._typing = whole  # type: ignore[attr-defined]
        return getattr(whole, name)


def _nd_array(np: Any) -> Any:
    """numpy._typing's NDArray, made as numpy 2 makes it."""
    return np.ndarray[tuple[Any, ...], np.dtype[TypeVar("_ScalarT", bound=np.generic)]]


@contextmanager
def skipping_numpy_extras() -> Iterator[None]:
    """numpy, if imported inside the block, is imported without its docstrings and with NDArray alone of its
    typing aliases, which it has whole once the block is over (see the module)."""
    if "numpy" in sys.modules:
        yield
        return
    finder = _NumpyExtras()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        stand_in = finder.typing_stand_in
        if stand_in is not None and sys.modules.get(TYPING) is stand_in:
            del sys.modules[TYPING]
            numpy = sys.modules.get("numpy")
            if getattr(numpy, "_typing", None) is stand_in:
                delattr(numpy, "_typing")
