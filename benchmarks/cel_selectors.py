"""CEL device selectors: common-expression-language (gangsched's choice) against cel-python, on upstream's
example expressions (k8s.io/dynamic-resource-allocation/cel/compile_test.go and the DRA docs).

Prints, per library: compile time per expression, evaluation time per (expression, device) on a prepared
context, and whether each expression gave the result upstream documents. cel-python is not a dependency:
`pip install cel-python` to include it (it is reported as missing otherwise).

    python benchmarks/cel_selectors.py
"""

from __future__ import annotations

import time
from typing import Any

from lightkube.models import resource_v1

from gangsched.api.cel import DeviceView, compile_selector, device_context, evaluate, maps_used

DRIVER = "dra.example.com"
DEVICE = resource_v1.Device.from_dict(
    {
        "name": "gpu-0",
        "attributes": {
            "model": {"string": "a100"},
            "index": {"int": 3},
            "healthy": {"bool": True},
            "other.example.com/numa": {"int": 1},
        },
        "capacity": {"memory": {"value": "40Gi"}},
    }
)
# (expression, what upstream's rules give for DEVICE)
EXPRESSIONS = [
    ('device.driver == "dra.example.com"', True),
    ('device.attributes["dra.example.com"].model == "a100"', True),
    ('device.attributes["dra.example.com"].index > 2', True),
    ('device.attributes["dra.example.com"].healthy', True),
    ('device.attributes["other.example.com"].numa == 1', True),
    ('"model" in device.attributes["dra.example.com"]', True),
    ('device.attributes["dra.example.com"].model.startsWith("h")', False),
    ('device.driver == "dra.example.com" && device.attributes["dra.example.com"].index in [1, 3, 5]', True),
]
ROUNDS = 2000


def _rust() -> tuple[float, float, list[bool]]:
    view = DeviceView(DRIVER, DEVICE)
    t0 = time.perf_counter()
    for expr, _ in EXPRESSIONS:
        compile_selector.__wrapped__(expr)  # uncached
    compile_us = (time.perf_counter() - t0) / len(EXPRESSIONS) * 1e6
    contexts = [device_context(view, compile_selector(e)[1], maps_used(e)) for e, _ in EXPRESSIONS]
    results = [evaluate(e, c) for (e, _), c in zip(EXPRESSIONS, contexts, strict=True)]
    t0 = time.perf_counter()
    for _ in range(ROUNDS):
        for (e, _), c in zip(EXPRESSIONS, contexts, strict=True):
            evaluate(e, c)
    eval_us = (time.perf_counter() - t0) / (ROUNDS * len(EXPRESSIONS)) * 1e6
    return compile_us, eval_us, results


def _celpy() -> tuple[float, float, list[bool]] | None:
    try:
        import celpy  # type: ignore[import-not-found]
    except ImportError:
        return None
    env = celpy.Environment()
    device: dict[str, Any] = {
        "driver": DRIVER,
        "allowMultipleAllocations": False,
        "attributes": {
            DRIVER: {"model": "a100", "index": 3, "healthy": True},
            "other.example.com": {"numa": 1},
        },
        "capacity": {DRIVER: {"memory": 40 * 2**30 * 1000}},
    }
    activation = {"device": celpy.json_to_cel(device)}
    t0 = time.perf_counter()
    programs = [env.program(env.compile(e)) for e, _ in EXPRESSIONS]
    compile_us = (time.perf_counter() - t0) / len(EXPRESSIONS) * 1e6
    results = [bool(p.evaluate(activation)) for p in programs]
    rounds = ROUNDS // 20
    t0 = time.perf_counter()
    for _ in range(rounds):
        for p in programs:
            p.evaluate(activation)
    eval_us = (time.perf_counter() - t0) / (rounds * len(programs)) * 1e6
    return compile_us, eval_us, results


def main() -> None:
    want = [w for _, w in EXPRESSIONS]
    print(f"{'library':28} {'compile us/expr':>16} {'eval us/device':>15}  correct")
    rust = _rust()
    print(f"{'common-expression-language':28} {rust[0]:16.1f} {rust[1]:15.1f}  {rust[2] == want}")
    py = _celpy()
    if py is None:
        print(f"{'cel-python':28} {'not installed (pip install cel-python)':>33}")
        return
    print(f"{'cel-python':28} {py[0]:16.1f} {py[1]:15.1f}  {py[2] == want}")
    print(
        f"ratio (cel-python / common-expression-language): compile {py[0] / rust[0]:.0f}x, "
        f"eval {py[1] / rust[1]:.0f}x"
    )


if __name__ == "__main__":
    main()
