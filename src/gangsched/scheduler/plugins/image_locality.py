"""ImageLocality: prefer nodes that already hold the pod's images (score, weight 1).
Upstream: plugins/imagelocality/image_locality.go.

Per node, the sum over the pod's containers, init containers and image volumes of the image's size scaled by
the fraction of nodes holding it (`int64(size * nodesWithIt / allNodes)`), clamped to [23 MiB, 1000 MiB x
number of images], mapped linearly onto 0..100. Image names are matched as written in the nodes'
`status.images[].names`, the pod's with `:latest` added when they carry no tag.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..snapshot import Snapshot
from . import Int64Array

NAME = "ImageLocality"
WEIGHT = 1
MAX_NODE_SCORE = 100
_MB = 1024 * 1024
MIN_THRESHOLD = 23 * _MB
MAX_CONTAINER_THRESHOLD = 1000 * _MB


def normalized_image_name(name: str) -> str:
    return name if name.rfind(":") > name.rfind("/") else name + ":latest"


def pod_images(spec: Any) -> tuple[list[str], int]:
    """(normalised names of the images the pod could find on a node, number of images it needs)."""
    names = [normalized_image_name(c.image or "") for c in spec.initContainers or []]
    names += [normalized_image_name(c.image or "") for c in spec.containers or []]
    count = len(names)
    for v in spec.volumes or []:
        if getattr(v, "image", None) is not None:
            names.append(normalized_image_name(v.image.reference or ""))
            count += 1
    return names, count


def raw_scores(snap: Snapshot, spec: Any) -> Int64Array | None:
    """Scores 0..100 per node, or None when no node holds any of the images (every node scores 0)."""
    names, count = pod_images(spec)
    total = np.zeros(len(snap), dtype=np.int64)
    found = False
    for name in names:
        held = snap.images.get(name)
        if held is None:
            continue
        nodes, size = held
        found = True
        total[nodes] += int(float(size) * (float(len(nodes)) / float(len(snap))))
    if not found or count == 0:
        return None
    high = MAX_CONTAINER_THRESHOLD * count
    clamped = np.clip(total, MIN_THRESHOLD, high)
    return MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) // (high - MIN_THRESHOLD)


def normalize(raw: Int64Array) -> Int64Array:
    return raw  # no ScoreExtensions upstream
