"""resourceclaim.BindTo's test of a pod claim against its PodGroup's claims
(k8s.io/dynamic-resource-allocation v0.37.2 resourceclaim.go): the pod claim is the group's shared claim only
when a PodGroup claim has the same name and the same resourceClaimName and resourceClaimTemplateName
(ptr.Equal). The scheduler (claims.pod_claims) and the store's resourceclaim controller (claim_controller)
both ask it."""

from __future__ import annotations

from typing import Any

import pytest
from lightkube.models import core_v1, scheduling_v1beta1

from gangsched.scheduler.claims import group_claim_of


def _group(*claims: dict[str, str]) -> scheduling_v1beta1.PodGroup:
    policy = scheduling_v1beta1.PodGroupSchedulingPolicy(basic={})
    spec = scheduling_v1beta1.PodGroupSpec(
        schedulingPolicy=policy,
        resourceClaims=[scheduling_v1beta1.PodGroupResourceClaim(**c) for c in claims] or None,
    )
    return scheduling_v1beta1.PodGroup(spec=spec)


TEMPLATE = {"name": "gpu", "resourceClaimTemplateName": "one-gpu"}


@pytest.mark.parametrize(
    ("pod_claim", "group", "shared"),
    [
        pytest.param(TEMPLATE, _group(TEMPLATE), True, id="same-name-same-template"),
        pytest.param(
            TEMPLATE,
            _group({"name": "gpu", "resourceClaimTemplateName": "two-gpus"}),
            False,
            id="other-template",
        ),
        pytest.param(
            TEMPLATE, _group({"name": "gpu", "resourceClaimName": "one-gpu"}), False, id="claim-not-template"
        ),
        pytest.param(
            TEMPLATE,
            _group({"name": "accel", "resourceClaimTemplateName": "one-gpu"}),
            False,
            id="other-name",
        ),
        pytest.param(
            {"name": "gpu", "resourceClaimName": "shared"},
            _group(
                {"name": "x", "resourceClaimName": "shared"}, {"name": "gpu", "resourceClaimName": "shared"}
            ),
            True,
            id="second-of-two",
        ),
        pytest.param(TEMPLATE, _group(), False, id="group-without-claims"),
        pytest.param(TEMPLATE, None, False, id="no-group"),
    ],
)
def test_group_claim_of(pod_claim: dict[str, str], group: Any, shared: bool) -> None:
    found = group_claim_of(core_v1.PodResourceClaim(**pod_claim), group)
    assert (found is not None) is shared
    if shared:
        assert found.name == pod_claim["name"]
