"""api/kinds.py imports a kind's lightkube model when it is first asked for: each kind's model is the class
named for it, and `kind_info` knows an object whatever made it, the loader or code that imported the model's
module itself (a controller, a test). The lazy part runs in fresh interpreters: this one has imported every
model."""

from __future__ import annotations

import subprocess
import sys

from lightkube.models import core_v1, resource_v1, scheduling_v1alpha3, storage_v1

from gangsched.api.jobset import JobSet
from gangsched.api.kinds import KINDS, kind_info


def test_each_kind_has_the_model_named_for_it() -> None:
    assert all(info.model.__name__ == kind for kind, info in KINDS.items())
    assert KINDS["Pod"].model is core_v1.Pod
    assert KINDS["StorageClass"].model is storage_v1.StorageClass
    assert KINDS["ResourceClaim"].model is resource_v1.ResourceClaim
    assert KINDS["CompositePodGroup"].model is scheduling_v1alpha3.CompositePodGroup
    assert KINDS["JobSet"].model is JobSet


def test_kind_info_of_objects() -> None:
    assert kind_info(core_v1.Pod()).kind == "Pod"
    assert kind_info(storage_v1.StorageClass(provisioner="p")).kind == "StorageClass"


def fresh(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout


def test_kind_info_of_an_object_whose_model_no_one_asked_for() -> None:
    """A StorageClass made by code that imported storage_v1 itself, before the loader decoded any: its
    KindInfo all the same, and the model is imported only then."""
    code = (
        "import sys; from gangsched.api.kinds import KINDS, kind_info; "
        "before = 'lightkube.models.storage_v1' in sys.modules; "
        "from lightkube.models import storage_v1; "
        "print(before, kind_info(storage_v1.StorageClass(provisioner='p')).kind, "
        "KINDS['StorageClass'].model is storage_v1.StorageClass)"
    )
    assert fresh(code).split() == ["False", "StorageClass", "True"]


def test_asking_for_a_model_imports_its_module_only() -> None:
    code = (
        "import sys; from gangsched.api.kinds import KINDS; "
        "names = ('lightkube.models.resource_v1', 'lightkube.models.storage_v1'); "
        "seen = lambda: [m in sys.modules for m in names]; "
        "before = seen(); KINDS['DeviceClass'].model; print(*before, *seen())"
    )
    assert fresh(code).split() == ["False", "False", "True", "False"]
