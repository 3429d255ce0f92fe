"""The `gangsched` command imports numpy without the modules that only write its C objects' docstrings and
with NDArray alone of its typing aliases (gangsched/_numpy_docs_skipped.py), and only the command: numpy works
the same, programs that import gangsched get numpy's docstrings, numpy.typing is numpy's own once the CLI is
imported, and nothing stays on the import path. Each case runs in a fresh interpreter: this one has imported
numpy."""

from __future__ import annotations

import subprocess
import sys


def run(code: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.split()


#: Printed by a process once it has imported what it imports: are numpy's docstrings there, is a docs-only
#: module a real one, is a finder of ours still on the import path, are numpy's typing aliases imported.
REPORT = (
    "import sys, numpy; docs = sys.modules['numpy._core._add_newdocs']; "
    "print(numpy.ndarray.__doc__ is not None, numpy.empty.__doc__ is not None, hasattr(docs, 'add_newdoc'), "
    "any(type(f).__module__.startswith('gangsched') for f in sys.meta_path), 'numpy._typing' in sys.modules)"
)


def test_the_command_imports_numpy_without_its_docstrings() -> None:
    """entry.main imports the CLI as the console script does (here `--version`, which exits), and the
    docstrings of numpy's C objects were never written."""
    code = (
        "import atexit, sys; sys.argv = ['gangsched', '--version']; "
        f"atexit.register(lambda: exec({REPORT!r})); "
        "from gangsched.entry import main; main()"
    )
    assert run(code)[-5:] == ["False", "False", "False", "False", "False"]


def test_a_program_that_imports_gangsched_gets_numpy_whole() -> None:
    assert run(f"import gangsched.cli; {REPORT}") == ["True", "True", "True", "False", "True"]


def test_numpy_typing_is_numpys_own_after_the_command_imported_numpy() -> None:
    """The stand-in of numpy's typing aliases is gone once the block is over: numpy.typing imports whole, and
    numpy.linalg's result tuples carry the annotations they have in a numpy imported as usual."""
    probe = (
        "import numpy, numpy.typing as npt, numpy.linalg._linalg as la; "
        "print(npt.NDArray[numpy.int64], npt.ArrayLike is not None, numpy._typing.__file__ is not None, "
        "repr([getattr(la, n).__annotations__ for n in "
        "('EigResult', 'EighResult', 'QRResult', 'SlogdetResult', 'SVDResult')]).replace(' ', ''))"
    )
    extras_skipped = (
        "from gangsched._numpy_docs_skipped import skipping_numpy_extras\n"
        f"with skipping_numpy_extras():\n    import gangsched.cli\n{probe}"
    )
    assert run(extras_skipped) == run(probe)


def test_numpy_without_its_docstrings_computes_as_numpy() -> None:
    """What the engine asks of numpy, in a process that imported it without its docstrings, against this
    process's numpy: masks, reductions, in-place arithmetic, the generator's SeedSequence."""
    probe = (
        "import numpy as np; a = np.arange(5000, dtype=np.int64) % 97; m = a >= 40; "
        "b = np.zeros(5000, dtype=np.int64); b[m] += a[m]; "
        "print(int(b.sum()), int(np.count_nonzero(m)), int(np.argmax(a)), "
        "np.flatnonzero(a == 96)[:3].tolist(), "
        "np.random.SeedSequence(7).generate_state(2).tolist())"
    )
    skipped = (
        "from gangsched._numpy_docs_skipped import skipping_numpy_extras\n"
        f"with skipping_numpy_extras():\n    import numpy\nassert numpy.ndarray.__doc__ is None\n{probe}"
    )
    assert run(skipped) == run(probe)


def test_a_numpy_that_reads_more_typing_aliases_gets_numpys_own_at_once() -> None:
    """Another numpy version's import might read more of numpy._typing than NDArray: asked for another name
    (or a submodule) inside the block, the stand-in gives its place to numpy's own module."""
    code = (
        "import sys\nfrom gangsched._numpy_docs_skipped import skipping_numpy_extras\n"
        "with skipping_numpy_extras():\n"
        "    import numpy\n"
        "    stand_in = sys.modules['numpy._typing']\n"
        "    import numpy._typing._nbit_base\n"
        "    from numpy._typing import ArrayLike\n"
        "    whole = sys.modules['numpy._typing']\n"
        "    print(hasattr(stand_in, '__file__'), whole.ArrayLike is ArrayLike, numpy._typing is whole,\n"
        "          whole.__file__.endswith('__init__.py'))\n"
        "import numpy.typing as npt\n"
        "print(npt.ArrayLike is ArrayLike, sys.modules['numpy._typing'] is whole)"
    )
    assert run(code) == ["False", "True", "True", "True", "True", "True"]
