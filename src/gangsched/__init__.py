"""gangsched: workload-aware (gang) scheduling for Kubernetes v1.37, in Python.

One decision core (snapshot in, Decision out) shared by the CLI, the simulator and the live scheduler.
"""

from ._lightkube_client_deferred import defer as _defer_lightkube_client

_defer_lightkube_client()  # before any module imports lightkube's models (see that module)

__version__ = "0.1.0"
__all__ = ["__version__"]
