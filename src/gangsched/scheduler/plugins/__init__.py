"""kube-scheduler's default filter and score plugins, vectorised over a Snapshot's nodes.

Static filters return `Rejections`: (mask of rejected nodes, reason) pairs; the evaluator keeps, for each
node, the reason of the first plugin that rejected it, in upstream's plugin order.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

BoolArray = npt.NDArray[np.bool_]
Rejections = list[tuple[BoolArray, str]]

__all__ = ["BoolArray", "Rejections"]
