"""The validate stage on a real control plane (tests/helpers/controlplane.py): the real Pod Security admission
(restricted) judges the smoke and metrics pods, the real Job controller and scheduler run them. KWOK stands
in for the kubelet: it completes the Job pods, and leaves pods of the one image it is told cannot be
pulled (controlplane.UNPULLABLE_IMAGE) in ImagePullBackOff, as a kubelet would.
"""
import time

import pytest

from controlplane import UNPULLABLE_IMAGE
from ansible_run import flat, recap, run_site
from inventories import one_t4_pool


@pytest.fixture(scope="module")
def plain_pool(control_plane, tmp_path_factory):
    inv = tmp_path_factory.mktemp("validate") / "inv"
    one_t4_pool(inv)
    control_plane.add_node("gpu-a1", gpu=1, labels={"gpufleet.io/pool": "plain"},
                           taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}])
    control_plane.add_node("cpu-1")  # where the metrics probe (no GPU, no toleration) runs
    return control_plane, str(inv)


@pytest.mark.parametrize("image,expect_rc,expect", [
    (None, 0, None),
    (UNPULLABLE_IMAGE, 2, "smoke job failed: container cuda-vectoradd ImagePullBackOff"),
])
def test_validate_stage_runs_in_a_restricted_namespace_ends_fast_and_cleans_up(plain_pool, tmp_path, image,
                                                                              expect_rc, expect):
    cp, inv = plain_pool
    extra = ["-e", "gpufleet_apply=true", "-e", "gpufleet_k8s_kubeconfig=%s" % cp.kubeconfig,
             "-e", '{"gpu_validate_timeout": 300}']
    if image:
        extra += ["-e", "gpu_validate_smoke_image=%s" % image]
    started = time.monotonic()
    rc, out = run_site(tmp_path / "b", *extra, playbook="playbooks/validate.yml", inventory=inv)
    assert time.monotonic() - started < 200  # the verdict came at once, not at the 300 s deadline
    text = flat(out)
    assert rc == expect_rc, out[-4000:]
    if expect:
        assert expect in text, text[-3000:]
    else:
        assert recap(out)["changed"] == 0
    assert "TASK [gpu_validate : Wait for every validation Job" in text
    # the real API server admitted both pods in the restricted namespace (no FailedCreate), then the
    # stage removed the namespace with its Jobs and pods
    assert "FailedCreate" not in text and "violates PodSecurity" not in text
    assert not cp.exists("/api/v1/namespaces/gpufleet-validate")
