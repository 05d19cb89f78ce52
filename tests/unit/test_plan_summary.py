"""plan.md (module_utils/fleet/plan_summary.py): the exact text, for a render and an apply run."""
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.k8s.plugins.filter.plan_summary import gpufleet_plan_summary
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.plan_summary import plan_markdown

PLAN = {"cluster_name": "prod", "platform": "gke", "apply": False, "addons_mode": "standalone",
        "pools": [{"name": "train", "gpu_type": "a100-80gb", "gpus_per_node": 8, "min_nodes": 0, "max_nodes": None,
                   "sharing": {"mode": "mig", "mig_strategy": "mixed"}, "node_group": "gpu_pool_train"},
                  {"name": "infer", "gpu_type": "l4", "gpus_per_node": 1, "min_nodes": 1, "max_nodes": 4,
                   "sharing": {"mode": "time-slicing", "replicas": 4}, "node_group": "gpu_pool_infer"}],
        "gke_class_sharing": ["infer: time-sharing, 4 clients per GPU"]}


def test_render_mode_text():
    assert plan_markdown(PLAN, ["provision/a.yaml", "cluster/b.yaml"]) == (
        "# gpufleet plan: prod (gke)\n"
        "\n"
        "Mode: render (nothing was changed)\n"
        "Add-ons: standalone\n"
        "\n"
        "| pool | GPU type | GPUs/node | nodes (min-max) | sharing | node group |\n"
        "|---|---|---|---|---|---|\n"
        "| train | a100-80gb | 8 | 0-unbounded | mig mixed | gpu_pool_train |\n"
        "| infer | l4 | 1 | 1-4 | time-slicing x4 | gpu_pool_infer |\n"
        "\n"
        "## GPU sharing of the ComputeClass pools\n"
        "- infer: time-sharing, 4 clients per GPU\n"
        "\n"
        "## Rendered files\n"
        "- provision/a.yaml\n"
        "- cluster/b.yaml\n"
        "\n"
        "## Next\n"
        "Review the files above (or commit them for GitOps), then run again with gpufleet_apply: true\n"
        "to bootstrap the GPU hosts and apply the manifests.\n")


def test_apply_mode_without_class_sharing_or_files():
    plan = dict(PLAN, apply=True, gke_class_sharing=[], pools=[])
    text = plan_markdown(plan, [])
    assert "Mode: apply\n" in text and "ComputeClass" not in text
    assert text.endswith("## Rendered files\n\n## Next\n"
                         "Applied to the cluster; run playbooks/validate.yml to check GPUs are schedulable.\n")


def test_filter_names_what_is_missing():
    with pytest.raises(AnsibleFilterError, match="run the preflight stage"):
        gpufleet_plan_summary({"platform": "eks"}, [])
    with pytest.raises(AnsibleFilterError, match="must be gpufleet_plan"):
        gpufleet_plan_summary([], [])
