"""benchmarks/load.py measures what it claims: its generated pods are valid and all of them are read."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from api_helpers import ROOT


def test_generated_pods_load_and_validate(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("load_benchmark", ROOT / "benchmarks" / "load.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    path = tmp_path / "pods.yaml"
    objects = bench.generate(path, 20)
    assert objects == 20 + 3  # 20 pods in groups of 8
    baseline = bench.run_baseline(path)
    ours = bench.run_gangsched(path)
    assert baseline["objects"] == ours["objects"] == objects
    assert ours["problems"] == 0
