"""GPU Nodes on the test control plane through the real provision stage: an inventory of hosts in the
example cluster's train pool, the provision run in apply mode against the control plane, and what gpufleet
left on a Node (its labels, taints and annotations). Shared by the test_cp_*node* tests."""
import yaml

from ansible_run import ROOT, run_site
from controlplane import free_port


def cluster_inventory(inv, settings, groups):
    """Write at ``inv`` the inventory of a cluster on the test control plane: group_vars/all/gpufleet.yml
    (``settings``: YAML text or a mapping), the controller (localhost, local connection, the playbook's
    Python) and the GPU node groups ``groups`` {group: {host: host vars or None}}. Returns ``inv`` as text."""
    (inv / "group_vars" / "all").mkdir(parents=True, exist_ok=True)
    (inv / "group_vars" / "all" / "gpufleet.yml").write_text(
        settings if isinstance(settings, str) else yaml.safe_dump(settings))
    controller = {"localhost": {"ansible_connection": "local",
                                "ansible_python_interpreter": "{{ ansible_playbook_python }}"}}
    (inv / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {
        "gpufleet_controller": {"hosts": controller},
        "gpu_nodes": {"children": {group: {"hosts": hosts} for group, hosts in groups.items()}}}}}))
    return str(inv)


def unreachable_pool(cp, inv, settings, group, hosts, **node):
    """A pool of GPU hosts that exist only as Nodes: the inventory at ``inv`` (cluster_inventory; the hosts of
    ``group`` get a closed loopback port as their SSH address, so whatever must reach a host finds it
    unreachable while the cluster side of a stage runs) and a KWOK Node "gpu-<host>" for each host
    (``node``: ControlPlane.add_node's keywords, e.g. gpu=2). Returns ``inv`` as text."""
    port = free_port()
    out = cluster_inventory(inv, settings, {group: {
        h: {"gpufleet_node_name": "gpu-" + h, "ansible_host": "127.0.0.1", "ansible_port": port} for h in hosts}})
    for h in hosts:
        cp.add_node("gpu-" + h, **node)
    return out


def inventory(tmp_path, hosts, name="inv"):
    """The example cluster's pools; ``hosts`` {host: Node name} all in the train pool."""
    with open("%s/inventories/example/group_vars/all/gpufleet.yml" % ROOT) as f:
        settings = f.read()
    return cluster_inventory(tmp_path / name, settings, {
        "gpu_pool_train_a100": {host: {"gpufleet_node_name": node} for host, node in hosts.items()},
        "gpu_pool_infer_l4": {}})


def provision(cp, tmp_path, inv, *extra):
    return run_site(tmp_path / "build", "-e", "gpufleet_apply=true", "-e", "gpufleet_k8s_kubeconfig=%s" % cp.kubeconfig,
                    "-e", '{"gpu_pools_examples": false}', *extra, playbook="playbooks/provision.yml", inventory=inv)


def gpufleet_traces(node):
    meta = node["metadata"]
    return ({k: v for k, v in meta.get("labels", {}).items() if k.startswith("gpufleet.io/")
             or k == "nvidia.com/device-plugin.config"},
            [t for t in node["spec"].get("taints") or [] if t["key"] == "nvidia.com/gpu"],
            {k: v for k, v in (meta.get("annotations") or {}).items() if k.startswith("gpufleet.io/")})
