"""Issue 30 item 5 on a real control plane (tests/helpers/controlplane.py): gpufleet labels, relaxes and deletes only
namespaces it created. The real cluster playbook (apply mode) with dcgm-exporter alone:

- a user's namespace with the user's ConfigMap, given as dcgm_exporter_namespace: after the apply it is not
  relabelled (no Pod Security privileged, no managed-by gpufleet, no ownership annotation) and the run warns
  which labels the exporter needs; after dcgm_exporter_state=absent the namespace and the user's ConfigMap
  remain and gpufleet's objects there are gone;
- the namespace gpufleet creates (the default) carries gpufleet.io/created-by and is deleted on absent;
- a namespace an older gpufleet created (its server-side apply, no annotation) is adopted and deleted on absent.
Every check reads the objects back through the API server.
"""

import pytest

from ansible_run import flat, recap, run_site

USER_NS = "team-a"
OWN_NS = "nvidia-dcgm-exporter"
CREATED_BY = "gpufleet.io/created-by"


def dcgm(cp, tmp, *extra):
    """The cluster stage with dcgm-exporter only (device plugin and dashboards off)."""
    return run_site(tmp / "build", "-e", "gpufleet_apply=true", "-e", "gpufleet_k8s_kubeconfig=%s" % cp.kubeconfig,
                    "-e", '{"nvidia_device_plugin_enabled": false, "gpu_monitoring_enabled": false, '
                          '"dcgm_exporter_service_monitor": false}', *extra, playbook="playbooks/cluster.yml")


def namespace(cp, name):
    """The live Namespace, or None when it is gone or going."""
    path = "/api/v1/namespaces/" + name
    if not cp.exists(path):
        return None
    live = cp.get(path)
    return None if live["metadata"].get("deletionTimestamp") else live


def gpufleet_objects(cp, ns):
    """(kind, name) of the objects labelled managed-by gpufleet in ``ns``."""
    out = []
    for path, kind in (("/apis/apps/v1/namespaces/%s/daemonsets", "DaemonSet"),
                       ("/api/v1/namespaces/%s/services", "Service"),
                       ("/api/v1/namespaces/%s/configmaps", "ConfigMap"),
                       ("/api/v1/namespaces/%s/serviceaccounts", "ServiceAccount")):
        for item in cp.items(path % ns):
            if (item["metadata"].get("labels") or {}).get("app.kubernetes.io/managed-by") == "gpufleet":
                out.append((kind, item["metadata"]["name"]))
    return sorted(out)


@pytest.fixture(scope="module")
def cp(control_plane):
    return control_plane


def users_namespace(cp, name):
    """A namespace made as ``kubectl create`` makes it, holding the user's ConfigMap; its metadata."""
    cp.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": name, "labels": {"owner": "team"}}})
    cp.create("/api/v1/namespaces/%s/configmaps" % name, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "user-settings", "namespace": name}, "data": {"keep": "me"}})
    return cp.get("/api/v1/namespaces/" + name)["metadata"]


def test_a_users_namespace_is_not_relabelled(cp, tmp_path):
    before = users_namespace(cp, USER_NS)
    # check mode first: the same warning, nothing written, and no Namespace in the diff
    rc, out = dcgm(cp, tmp_path, "-e", "dcgm_exporter_namespace=" + USER_NS, "--check", "--diff")
    assert rc == 0, out[-4000:]
    assert "Namespace team-a was not created by gpufleet" in flat(out), flat(out)[-3000:]
    assert "Namespace/team-a (live)" not in out
    assert cp.get("/api/v1/namespaces/" + USER_NS)["metadata"]["resourceVersion"] == before["resourceVersion"]

    rc, out = dcgm(cp, tmp_path, "-e", "dcgm_exporter_namespace=" + USER_NS)
    assert rc == 0, out[-4000:]
    live = namespace(cp, USER_NS)["metadata"]
    assert live["labels"] == before["labels"], live["labels"]  # no Pod Security privileged, no managed-by
    assert CREATED_BY not in (live.get("annotations") or {})
    assert live["resourceVersion"] == before["resourceVersion"]  # not written at all
    assert ("DaemonSet", "dcgm-exporter") in gpufleet_objects(cp, USER_NS)
    text = flat(out)
    assert "Namespace team-a was not created by gpufleet" in text, text[-3000:]
    assert "Its Pod Security labels are your responsibility: cluster/dcgm-exporter needs " \
           "pod-security.kubernetes.io/audit=privileged, pod-security.kubernetes.io/enforce=privileged" in text


def test_a_users_namespace_survives_absent_with_its_configmap_and_loses_only_gpufleets_objects(cp, tmp_path):
    name = "team-b"
    before = users_namespace(cp, name)
    rc, out = dcgm(cp, tmp_path, "-e", "dcgm_exporter_namespace=" + name)
    assert rc == 0, out[-4000:]
    assert ("DaemonSet", "dcgm-exporter") in gpufleet_objects(cp, name)

    rc, out = dcgm(cp, tmp_path, "-e", "dcgm_exporter_namespace=" + name, "-e", "dcgm_exporter_state=absent")
    assert rc == 0, out[-4000:]
    assert namespace(cp, name) is not None, "the user's namespace was deleted"
    assert cp.get("/api/v1/namespaces/%s/configmaps/user-settings" % name)["data"] == {"keep": "me"}
    assert gpufleet_objects(cp, name) == []
    assert namespace(cp, name)["metadata"]["labels"] == before["labels"]
    assert "Namespace team-b is kept with everything else in it" in flat(out), flat(out)[-3000:]

    # absent again: nothing left to do
    rc, out = dcgm(cp, tmp_path, "-e", "dcgm_exporter_namespace=" + name, "-e", "dcgm_exporter_state=absent")
    assert rc == 0 and recap(out)["changed"] == 0, out[-4000:]
    assert namespace(cp, name) is not None


def test_the_namespace_gpufleet_created_is_recorded_and_deleted_on_absent(cp, tmp_path):
    rc, out = dcgm(cp, tmp_path)
    assert rc == 0, out[-4000:]
    live = namespace(cp, OWN_NS)["metadata"]
    assert live["annotations"][CREATED_BY] == "cluster/dcgm-exporter"
    assert live["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    assert live["labels"]["app.kubernetes.io/managed-by"] == "gpufleet"

    rc, out = dcgm(cp, tmp_path)
    assert rc == 0 and recap(out)["changed"] == 0, out[-4000:]

    rc, out = dcgm(cp, tmp_path, "-e", "dcgm_exporter_state=absent")
    assert rc == 0, out[-4000:]
    assert "Namespace nvidia-dcgm-exporter is deleted with everything in it: gpufleet created it (annotation " \
           "gpufleet.io/created-by: cluster/dcgm-exporter)" in flat(out), flat(out)[-3000:]
    assert namespace(cp, OWN_NS) is None


def test_a_namespace_an_older_gpufleet_created_is_adopted_then_deleted(cp, tmp_path):
    ns = "dcgm-older"
    # what gpufleet before the annotation applied: its server-side apply with field manager gpufleet
    cp.apply("/api/v1/namespaces/" + ns, {"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": ns, "labels": {"app.kubernetes.io/managed-by": "gpufleet",
                               "pod-security.kubernetes.io/enforce": "privileged"}}}, manager="gpufleet", force=False)
    rc, out = dcgm(cp, tmp_path, "-e", "dcgm_exporter_namespace=" + ns)
    assert rc == 0, out[-4000:]
    assert namespace(cp, ns)["metadata"]["annotations"][CREATED_BY] == "cluster/dcgm-exporter"
    assert "was not created by gpufleet" not in flat(out)
    rc, out = dcgm(cp, tmp_path, "-e", "dcgm_exporter_namespace=" + ns, "-e", "dcgm_exporter_state=absent")
    assert rc == 0, out[-4000:]
    assert namespace(cp, ns) is None


def test_a_namespace_two_components_share_goes_with_the_last_of_them(cp, tmp_path):
    ns = "gpu-shared"
    both = ["-e", '{"dcgm_exporter_namespace": "%s", "gpu_monitoring_namespace": "%s", '
                  '"gpu_monitoring_enabled": true}' % (ns, ns)]
    rc, out = dcgm(cp, tmp_path, *both)
    assert rc == 0, out[-4000:]
    assert namespace(cp, ns)["metadata"]["annotations"][CREATED_BY] == "cluster/dcgm-exporter"
    assert ("ConfigMap", "gpufleet-gpu-dashboard") in gpufleet_objects(cp, ns)

    # the creator goes, the dashboard stays: the namespace is kept
    rc, out = dcgm(cp, tmp_path, *both + ["-e", "dcgm_exporter_state=absent"])
    assert rc == 0, out[-4000:]
    assert "Namespace gpu-shared is kept: gpufleet's cluster/gpu-monitoring still has objects there" in flat(out), \
        flat(out)[-3000:]
    assert namespace(cp, ns) is not None
    assert gpufleet_objects(cp, ns) == [("ConfigMap", "gpufleet-gpu-dashboard")]

    # the last user goes: the namespace goes with it
    rc, out = dcgm(cp, tmp_path, *both + ["-e", "dcgm_exporter_state=absent", "-e", "gpu_monitoring_state=absent"])
    assert rc == 0, out[-4000:]
    assert "Namespace gpu-shared is deleted with everything in it: gpufleet created it (gpufleet's " \
           "cluster/dcgm-exporter, which no longer uses it)" in flat(out), flat(out)[-3000:]
    assert namespace(cp, ns) is None


def test_a_namespace_gpufleet_created_with_a_users_object_in_it_is_kept(cp, tmp_path):
    """Issue 39: disabling monitoring deleted gpufleet-monitoring with a user's ConfigMap in it. Now the prune
    (monitoring off) and the delete (state absent) keep such a namespace and name what is in it; once the user's
    object is gone the namespace goes."""
    ns = "gpufleet-monitoring"
    on = ["-e", '{"gpu_monitoring_enabled": true}']
    rc, out = dcgm(cp, tmp_path, *on)
    assert rc == 0, out[-4000:]
    assert namespace(cp, ns)["metadata"]["annotations"][CREATED_BY] == "cluster/gpu-monitoring"
    cp.create("/api/v1/namespaces/%s/configmaps" % ns, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "user-dashboard", "namespace": ns}, "data": {"keep": "me"}})

    # monitoring off: the ApplySet prune deletes gpufleet's dashboard, keeps the namespace and says why
    rc, out = dcgm(cp, tmp_path)
    assert rc == 0, out[-4000:]
    text = flat(out)
    assert "Namespace gpufleet-monitoring is kept although gpufleet created it: it holds objects gpufleet did not " \
           "create: ConfigMap/user-dashboard." in text, text[-3000:]
    assert namespace(cp, ns) is not None
    assert cp.get("/api/v1/namespaces/%s/configmaps/user-dashboard" % ns)["data"] == {"keep": "me"}
    assert gpufleet_objects(cp, ns) == []

    # on again, then absent: the same
    rc, out = dcgm(cp, tmp_path, *on)
    assert rc == 0, out[-4000:]
    rc, out = dcgm(cp, tmp_path, *on + ["-e", "gpu_monitoring_state=absent"])
    assert rc == 0, out[-4000:]
    assert "it holds objects gpufleet did not create: ConfigMap/user-dashboard." in flat(out), flat(out)[-3000:]
    assert cp.get("/api/v1/namespaces/%s/configmaps/user-dashboard" % ns)["data"] == {"keep": "me"}

    # the user's ConfigMap gone: the namespace goes on the next absent
    cp.delete("/api/v1/namespaces/%s/configmaps/user-dashboard" % ns)
    rc, out = dcgm(cp, tmp_path, *on)
    assert rc == 0, out[-4000:]
    rc, out = dcgm(cp, tmp_path, *on + ["-e", "gpu_monitoring_state=absent"])
    assert rc == 0, out[-4000:]
    assert "Namespace gpufleet-monitoring is deleted with everything in it" in flat(out), flat(out)[-3000:]
    assert namespace(cp, ns) is None
