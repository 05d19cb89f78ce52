"""GPU Nodes on the test control plane through the real provision stage: an inventory of hosts in the
example cluster's train pool, the provision run in apply mode against the control plane, and what gpufleet
left on a Node (its labels, taints and annotations). Shared by the test_cp_*node* tests."""
from ansible_run import ROOT, run_site


def inventory(tmp_path, hosts, name="inv"):
    """The example cluster's pools; ``hosts`` {host: Node name} all in the train pool."""
    inv = tmp_path / name
    (inv / "group_vars" / "all").mkdir(parents=True, exist_ok=True)
    with open("%s/inventories/example/group_vars/all/gpufleet.yml" % ROOT) as f:
        (inv / "group_vars" / "all" / "gpufleet.yml").write_text(f.read())
    lines = ["all:", "  children:", "    gpufleet_controller:", "      hosts:", "        localhost:",
             "          ansible_connection: local",
             "          ansible_python_interpreter: \"{{ ansible_playbook_python }}\"",
             "    gpu_nodes:", "      children:", "        gpu_pool_train_a100:", "          hosts:"]
    for host, node in hosts.items():
        lines.append("            %s: {gpufleet_node_name: %s}" % (host, node))
    lines += ["        gpu_pool_infer_l4:", "          hosts: {}"]
    (inv / "hosts.yml").write_text("\n".join(lines) + "\n")
    return str(inv)


def provision(cp, tmp_path, inv, *extra):
    return run_site(tmp_path / "build", "-e", "gpufleet_apply=true", "-e", "gpufleet_k8s_kubeconfig=%s" % cp.kubeconfig,
                    "-e", '{"gpu_pools_examples": false}', *extra, playbook="playbooks/provision.yml", inventory=inv)


def gpufleet_traces(node):
    meta = node["metadata"]
    return ({k: v for k, v in meta.get("labels", {}).items() if k.startswith("gpufleet.io/")
             or k == "nvidia.com/device-plugin.config"},
            [t for t in node["spec"].get("taints") or [] if t["key"] == "nvidia.com/gpu"],
            {k: v for k, v in (meta.get("annotations") or {}).items() if k.startswith("gpufleet.io/")})
