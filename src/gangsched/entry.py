"""The `gangsched` command's entry point: the click group of cli.py, imported with the cyclic GC paused.

Importing the CLI (numpy, the decision core, lightkube's models) allocates hundreds of thousands of objects
that live as long as the process; the collector would walk them again and again while they are being
created (over a hundred collections, 0.03-0.04 s of CPU on this project's machine: a tenth of what
`schedule` spends on 3,000 pods). Nothing in the imports needs a collection; what they made is then
frozen out of the collector's reach (resuming it alone would have the first collection walk all of it).
The command runs with click's context object saying that the process is its own (cli.OWNS_PROCESS), which
lets `schedule` end it once its output is flushed instead of tearing down what it built.

numpy's OpenBLAS starts a pool of worker threads when numpy is imported, one per core, and they spin
while waiting for work: about 0.1 s of CPU on this project's machine (2 cores, quiet), as much as the
import itself, for a program that calls no BLAS routine (no matrix products: the engine's arrays are
integer counts and masks). The console script asks for one thread unless the user set a number.

numpy is imported without the modules that only write the docstrings of its C objects, and with NDArray
alone of its typing aliases (_numpy_docs_skipped.py): a third of numpy's import, for text a command never
shows and types only a checker reads.
"""

from __future__ import annotations

import gc
import os

from ._numpy_docs_skipped import skipping_numpy_extras


def main() -> None:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # read once, when numpy loads OpenBLAS
    gc.disable()
    try:
        with skipping_numpy_extras():  # numpy's C objects' docstrings, its typing aliases: never used
            from .cli import OWNS_PROCESS
            from .cli import main as cli
    finally:
        gc.freeze()  # the modules' objects: never garbage, never walked (else the next collection would)
        gc.enable()
    cli(obj={OWNS_PROCESS: True})
