"""The workloadbuilder: allow-lists, validation at the caller's paths, build once,
PodGroups from templates.
"""

from __future__ import annotations

import pytest
from lightkube.models import meta_v1, scheduling_v1alpha3, scheduling_v1beta1

from gangsched.builder import (
    Builder,
    BuildError,
    BuildOptions,
    CompositeGroupConfig,
    CompositeWorkloadItem,
    DisruptionModeOption,
    PodGroupConfig,
    SchedulingPolicyOption,
    WorkloadItem,
    default_gang_min_count,
)

OWNER = meta_v1.OwnerReference(
    apiVersion="batch/v1", kind="Job", name="trainer", uid="job-uid", controller=True
)
ALL_POLICIES = [SchedulingPolicyOption.BASIC, SchedulingPolicyOption.GANG]
ALL_MODES = [DisruptionModeOption.SINGLE, DisruptionModeOption.ALL]
GANG = scheduling_v1alpha3.WorkloadPodGroupSchedulingPolicy(
    gang=scheduling_v1alpha3.WorkloadPodGroupGangSchedulingPolicy()
)
BASIC = scheduling_v1alpha3.WorkloadPodGroupSchedulingPolicy(basic={})
SINGLE = scheduling_v1alpha3.WorkloadPodGroupDisruptionMode(single={})
ALL = scheduling_v1alpha3.WorkloadPodGroupDisruptionMode(all={})


def options(
    policies: list[SchedulingPolicyOption] = ALL_POLICIES, modes: list[DisruptionModeOption] = ALL_MODES
) -> BuildOptions:
    return BuildOptions(
        name="trainer-wl",
        namespace="ml",
        owner=OWNER,
        allowed_policies=policies,
        allowed_disruption_modes=modes,
    )


def item(config: PodGroupConfig | None, *, default: PodGroupConfig | None = None) -> WorkloadItem:
    return WorkloadItem(
        name="trainer-pgt-0",
        user_config=config,
        default_config=default,
        callbacks=[default_gang_min_count(4)],
    )


@pytest.mark.parametrize(
    ("config", "policies", "modes", "want"),
    [
        (
            PodGroupConfig(policy=BASIC),
            [SchedulingPolicyOption.GANG],
            ALL_MODES,
            "s.schedulingPolicy: Forbidden: basic scheduling policy is not supported by this controller",
        ),
        (
            PodGroupConfig(policy=GANG),
            [SchedulingPolicyOption.BASIC],
            ALL_MODES,
            "s.schedulingPolicy: Forbidden: gang scheduling policy is not supported by this controller",
        ),
        (
            PodGroupConfig(policy=GANG, disruption_mode=SINGLE),
            ALL_POLICIES,
            [DisruptionModeOption.ALL],
            "s.disruptionMode: Forbidden: the disruptionMode `single` is not supported by this controller",
        ),
        (
            PodGroupConfig(policy=GANG, disruption_mode=ALL),
            ALL_POLICIES,
            [DisruptionModeOption.SINGLE],
            "s.disruptionMode: Forbidden: the disruptionMode `all` is not supported by this controller",
        ),
        (
            PodGroupConfig(policy=GANG),
            [],
            ALL_MODES,
            "s.schedulingPolicy: Forbidden: gang scheduling policy is not supported by this controller",
        ),
    ],
    ids=[
        "basic-not-allowed",
        "gang-not-allowed",
        "single-not-allowed",
        "all-not-allowed",
        "empty-list-allows-nothing",
    ],
)
def test_allow_lists_refuse_what_is_not_listed(
    config: PodGroupConfig,
    policies: list[SchedulingPolicyOption],
    modes: list[DisruptionModeOption],
    want: str,
) -> None:
    errors = Builder(item(config), options(policies, modes)).validate("s")
    assert [str(e) for e in errors] == [want]


def test_allow_list_applies_to_the_controller_default_too() -> None:
    # The user wrote nothing; the controller's Basic default is what gets checked.
    errors = Builder(
        item(None, default=PodGroupConfig(policy=BASIC)), options([SchedulingPolicyOption.GANG])
    ).validate("s")
    assert [str(e) for e in errors] == [
        "s.schedulingPolicy: Forbidden: basic scheduling policy is not supported by this controller"
    ]


def test_all_with_basic_is_refused_with_upstream_message() -> None:
    errors = Builder(item(PodGroupConfig(policy=BASIC, disruption_mode=ALL)), options()).validate(
        "spec.scheduling"
    )
    assert [str(e) for e in errors] == [
        'spec.scheduling.disruptionMode: Invalid value: "": '
        "the disruptionMode `all` is not supported with the Basic scheduling policy"
    ]


@pytest.mark.parametrize(
    ("config", "want"),
    [
        (
            PodGroupConfig(policy=scheduling_v1alpha3.WorkloadPodGroupSchedulingPolicy()),
            'x.schedulingPolicy: Invalid value: "": must specify one of: `basic`, `gang`',
        ),
        (
            PodGroupConfig(
                policy=scheduling_v1alpha3.WorkloadPodGroupSchedulingPolicy(
                    basic={}, gang=scheduling_v1alpha3.WorkloadPodGroupGangSchedulingPolicy()
                )
            ),
            'x.schedulingPolicy: Invalid value: "{basic, gang}": '
            "must specify exactly one of: `basic`, `gang`",
        ),
        (
            PodGroupConfig(
                policy=scheduling_v1alpha3.WorkloadPodGroupSchedulingPolicy(
                    gang=scheduling_v1alpha3.WorkloadPodGroupGangSchedulingPolicy(minCount=0)
                )
            ),
            "x.schedulingPolicy.gang.minCount: Invalid value: 0: must be greater than or equal to 1",
        ),
        (
            PodGroupConfig(
                policy=GANG,
                constraints=scheduling_v1alpha3.WorkloadPodGroupSchedulingConstraints(
                    topology=[
                        scheduling_v1alpha3.TopologyConstraint(key="a"),
                        scheduling_v1alpha3.TopologyConstraint(key="b"),
                    ]
                ),
            ),
            "x.schedulingConstraints.topology: Too many: 2: must have at most 1 item",
        ),
        (
            PodGroupConfig(
                policy=GANG, resource_claims=[scheduling_v1alpha3.WorkloadPodGroupResourceClaim(name="gpu")]
            ),
            'x.resourceClaims[0]: Invalid value: "": '
            "must specify exactly one of: `resourceClaimName`, `resourceClaimTemplateName`",
        ),
        (
            PodGroupConfig(
                policy=GANG,
                resource_claims=[
                    scheduling_v1alpha3.WorkloadPodGroupResourceClaim(name=f"c{i}", resourceClaimName="rc")
                    for i in range(5)
                ],
            ),
            "x.resourceClaims: Too many: 5: must have at most 4 items",
        ),
    ],
    ids=[
        "empty-union",
        "two-members",
        "min-count-zero",
        "two-topologies",
        "claim-without-source",
        "five-claims",
    ],
)
def test_structural_rules_report_at_the_callers_paths(config: PodGroupConfig, want: str) -> None:
    assert [str(e) for e in Builder(item(config), options()).validate("x")] == [want]


def test_declarative_layer_can_be_disabled_like_in_tree_controllers() -> None:
    bad = PodGroupConfig(
        policy=scheduling_v1alpha3.WorkloadPodGroupSchedulingPolicy(
            gang=scheduling_v1alpha3.WorkloadPodGroupGangSchedulingPolicy(minCount=0)
        )
    )
    opts = BuildOptions(
        owner=OWNER,
        allowed_policies=ALL_POLICIES,
        allowed_disruption_modes=ALL_MODES,
        disable_declarative_validation=True,
    )
    assert Builder(item(bad), opts).validate("spec.scheduling") == []


def test_build_workload_compiles_once_and_sets_owner_and_controller_ref() -> None:
    builder = Builder(item(PodGroupConfig(policy=GANG)), options())
    workload = builder.build_workload()
    assert builder.build_workload() is workload
    assert workload.metadata.name == "trainer-wl" and workload.metadata.namespace == "ml"
    assert workload.metadata.ownerReferences == [OWNER]
    assert workload.spec.controllerRef == scheduling_v1beta1.TypedLocalObjectReference(
        apiGroup="batch", kind="Job", name="trainer"
    )
    [template] = workload.spec.podGroupTemplates
    assert template.name == "trainer-pgt-0"
    assert template.schedulingPolicy.gang is not None and template.schedulingPolicy.gang.minCount == 4


def test_build_refuses_an_ownerless_workload_and_an_unnamed_item() -> None:
    with pytest.raises(BuildError, match="must be owned by its controller"):
        Builder(item(None), BuildOptions(name="wl")).build_workload()
    with pytest.raises(BuildError, match="name cannot be empty"):
        Builder(WorkloadItem(name=""), options()).build_workload()


def test_new_pod_group_copies_every_block_of_its_template() -> None:
    claim = scheduling_v1alpha3.WorkloadPodGroupResourceClaim(
        name="gpu", resourceClaimTemplateName="gpu-tmpl"
    )
    config = PodGroupConfig(
        policy=GANG,
        constraints=scheduling_v1alpha3.WorkloadPodGroupSchedulingConstraints(
            topology=[scheduling_v1alpha3.TopologyConstraint(key="rack")]
        ),
        disruption_mode=ALL,
        resource_claims=[claim],
        priority_class_name="high",
    )
    builder = Builder(item(config), options())
    with pytest.raises(BuildError, match="no Workload available"):
        builder.new_pod_group("pg", "trainer-pgt-0")
    builder.build_workload()
    group = builder.new_pod_group("trainer-pg", "trainer-pgt-0")
    assert group.to_dict() == {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "trainer-pg", "namespace": "ml", "ownerReferences": [OWNER.to_dict()]},
        "spec": {
            "schedulingPolicy": {"gang": {"minCount": 4}},
            "disruptionMode": {"all": {}},
            "priorityClassName": "high",
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu-tmpl"}],
            "schedulingConstraints": {"topology": [{"key": "rack"}]},
            "workloadRef": {"templateName": "trainer-pgt-0", "workloadName": "trainer-wl"},
        },
    }
    with pytest.raises(BuildError, match="not found"):
        builder.new_pod_group("pg", "nope")


def test_builder_from_existing_workload_only_materialises() -> None:
    existing = Builder(item(PodGroupConfig(policy=GANG)), options()).build_workload()
    builder = Builder.from_existing_workload(existing, options())
    with pytest.raises(BuildError, match="not available on a Builder created from an existing Workload"):
        builder.build_workload()
    [error] = builder.validate("spec.scheduling")
    assert (
        str(error)
        == "spec.scheduling: Internal error: cannot validate a builder constructed from an existing workload"
    )
    group = builder.new_pod_group("pg", "trainer-pgt-0")
    assert group.spec.workloadRef == scheduling_v1beta1.WorkloadReference(
        workloadName="trainer-wl", templateName="trainer-pgt-0"
    )


def test_inputs_are_never_mutated_by_resolution() -> None:
    config = PodGroupConfig(policy=GANG)
    builder = Builder(item(config), options())
    builder.validate()
    builder.build_workload()
    assert (
        config.policy is not None and config.policy.gang is not None and config.policy.gang.minCount is None
    )


def test_composite_tree_compiles_and_materialises_composite_groups() -> None:
    root = CompositeWorkloadItem(
        name="root",
        user_config=CompositeGroupConfig(
            policy=scheduling_v1beta1.CompositePodGroupSchedulingPolicy(
                gang=scheduling_v1beta1.CompositeGangSchedulingPolicy(minGroupCount=2)
            )
        ),
        children=[item(PodGroupConfig(policy=GANG)), WorkloadItem(name="driver")],
    )
    builder = Builder(root, options())
    assert builder.validate("spec") == []
    workload = builder.build_workload()
    [template] = workload.spec.compositePodGroupTemplates
    assert [t.name for t in template.podGroupTemplates] == ["trainer-pgt-0", "driver"]
    cpg = builder.new_composite_pod_group("root-cpg", "root")
    assert isinstance(cpg, scheduling_v1alpha3.CompositePodGroup)
    assert cpg.spec.schedulingPolicy.gang is not None and cpg.spec.schedulingPolicy.gang.minGroupCount == 2
    child = builder.new_pod_group("driver-pg", "driver", parent_composite_pod_group_name="root-cpg")
    assert child.spec.parentCompositePodGroupName == "root-cpg"
    assert child.spec.schedulingPolicy.basic is not None


def test_template_names_must_be_unique_across_the_tree() -> None:
    root = CompositeWorkloadItem(name="x", children=[WorkloadItem(name="x")])
    assert [str(e) for e in Builder(root, options()).validate("spec")] == ['spec.name: Duplicate value: "x"']


def test_tree_shape_limits() -> None:
    deep: WorkloadItem | CompositeWorkloadItem = WorkloadItem(name="leaf")
    for level in range(4):
        deep = CompositeWorkloadItem(name=f"c{level}", children=[deep])
    assert [str(e) for e in Builder(deep, options()).validate("spec")] == [
        "spec.name: Invalid value: 5: the tree must be at most 4 levels deep"
    ]
    wide = CompositeWorkloadItem(name="root", children=[WorkloadItem(name=f"g{i}") for i in range(9)])
    assert [str(e) for e in Builder(wide, options()).validate("spec")] == [
        "spec.podGroupTemplates: Too many: 9: must have at most 8 items"
    ]
    assert [str(e) for e in Builder(CompositeWorkloadItem(name="r"), options()).validate("spec")] == [
        "spec: Required value: a composite group needs at least one child"
    ]
