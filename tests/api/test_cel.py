"""CEL device selectors in upstream's environment (k8s.io/dynamic-resource-allocation/cel): expressions
and outcomes from its compile_test.go, written out by hand."""

from __future__ import annotations

from typing import Any

import pytest
from api_helpers import run_validate
from lightkube.models import resource_v1

from gangsched.api.cel import CelError, DeviceView, compile_selector, device_context, evaluate, maps_used

DRIVER = "dra.example.com"


def _device(**fields: Any) -> DeviceView:
    return DeviceView(DRIVER, resource_v1.Device.from_dict({"name": "d", **fields}))


DEVICE = _device(
    attributes={
        "name": {"string": "gpu-0"},
        "dra.example.com/model": {"string": "a100"},
        "index": {"int": 3},
        "healthy": {"bool": True},
        "driverVersion": {"version": "1.2.3"},
        "other.example.com/numa": {"int": 1},
    },
    capacity={"memory": {"value": "40Gi"}},
)


def _matches(expression: str, view: DeviceView = DEVICE) -> bool:
    _, lookups = compile_selector(expression)
    return evaluate(expression, device_context(view, lookups, maps_used(expression)))


@pytest.mark.parametrize(
    ("expression", "want"),
    [
        ('device.driver == "dra.example.com"', True),
        ('device.driver == "other.example.com"', False),
        # an attribute without a domain belongs to the driver's domain
        ('device.attributes["dra.example.com"].name == "gpu-0"', True),
        ('device.attributes["dra.example.com"].model == "a100"', True),
        ('device.attributes["dra.example.com"].index > 2', True),
        ('device.attributes["dra.example.com"].healthy', True),
        ('device.attributes["other.example.com"].numa == 1', True),
        ('device.capacity["dra.example.com"].memory.compareTo(quantity("1Gi")) >= 0', True),
        ('device.capacity["dra.example.com"].memory.isLessThan(quantity("80Gi"))', True),
        ('device.attributes["dra.example.com"].driverVersion.isGreaterThan(semver("1.10.0"))', False),
        ('"model" in device.attributes["dra.example.com"]', True),
        ('"model" in device.attributes["unknown.example.com"]', False),  # unknown domain: an empty map
        ("device.allowMultipleAllocations", False),
    ],
)
def test_selector(expression: str, want: bool) -> None:
    assert _matches(expression) is want


def test_missing_attribute_is_a_runtime_error() -> None:
    with pytest.raises(CelError, match="CEL runtime error"):
        _matches('device.attributes["dra.example.com"].missing == 1')


def test_non_boolean_result_is_an_error() -> None:
    with pytest.raises(CelError, match="could not be converted to bool"):
        _matches("device.driver")


@pytest.mark.parametrize("expression", ["device.driver ==", "foo.bar == 1"])
def test_compile_errors(expression: str) -> None:
    with pytest.raises(CelError):
        compile_selector(expression)


@pytest.mark.parametrize(
    ("padding", "want"),
    [
        (10221, []),  # 10,240 bytes: CELSelectorExpressionMaxLength, compiled and accepted
        (10222, ["Too long: may not be more than 10240 bytes"]),  # one more: refused before compiling
    ],
    ids=["at-limit", "over-limit"],
)
def test_selector_length_limit(padding: int, want: list[str]) -> None:
    """validateCELExpression (pkg/apis/resource/validation): an expression longer than 10 KiB is `Too long`
    at its path and is not compiled."""
    expression = 'device.driver == "' + "a" * padding + '"'
    manifest = (
        "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: long}\n"
        f"spec: {{selectors: [{{cel: {{expression: '{expression}'}}}}]}}\n"
    )
    result = run_validate("-f", "-", stdin=manifest)
    prefix = "-: DeviceClass long: spec.selectors[0].cel.expression: "
    assert result.stdout.splitlines() == [prefix + line for line in want]
    assert result.exit_code == (1 if want else 0)
