"""Import lightkube's models without its HTTP client until something asks for the client.

lightkube's package `__init__` imports its clients (httpx2, asyncio, the kubeconfig loader, email and
http.client underneath), and Python runs a package's `__init__` before any of its subpackages, so the models
(`lightkube.models`, msgspec structs) that every gangsched command reads its input into cost that as well:
about 0.1 s of CPU at each start on this project's machine, as much as importing numpy, for commands
(`validate`, `build`, `schedule`, `simulate`) that never talk to an API server.

`defer()` registers the `lightkube` package without running its `__init__`; its subpackages and modules
import as usual. The first name asked of the package itself that is not one of its imported submodules
(`lightkube.Client`, `from lightkube import ApiError`, ...: live mode, the tests against an API server)
runs the real `__init__` then, in the same module object, so that everything lightkube defines is there from
then on. Nothing happens if lightkube is already imported.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

__all__ = ["defer"]


def defer() -> None:
    if "lightkube" in sys.modules:
        return
    spec = importlib.util.find_spec("lightkube")
    if spec is None or spec.loader is None:
        return  # not installed: the import that needs it fails as it would have
    loader = spec.loader
    package = importlib.util.module_from_spec(spec)

    def run_init(name: str) -> Any:  # PEP 562: called only for names the module does not have
        del vars(package)["__getattr__"]  # from here on a missing name is an AttributeError as usual
        loader.exec_module(package)
        return getattr(package, name)

    vars(package)["__getattr__"] = run_init
    sys.modules["lightkube"] = package
