"""Which of the shipped inventories (``inventories/<name>``) describe one cluster, the ones a site render
renders. One place for the rule, so that every test that renders "every inventory" agrees on the set."""
import os

from ansible_run import ROOT


def is_fleet_inventory(path):
    """True for a fleet inventory (docs/fleet.md: it holds ``group_vars/all/fleet.yml``): it names clusters
    and renders nothing itself."""
    return os.path.isfile(os.path.join(path, "group_vars", "all", "fleet.yml"))


def cluster_inventories(root=ROOT):
    """The sorted names of the inventories under ``<root>/inventories`` that render a cluster: the folders
    with a ``hosts.yml``, fleet inventories left out."""
    base = os.path.join(root, "inventories")
    return sorted(name for name in os.listdir(base)
                  if os.path.isfile(os.path.join(base, name, "hosts.yml"))
                  and not is_fleet_inventory(os.path.join(base, name)))


def one_t4_pool(inv):
    """Write a kubeadm inventory at ``inv`` (a folder that does not exist yet) with one standalone T4 pool
    ``plain`` (1 GPU per node, min_nodes 1) whose host h1 is the Node gpu-a1. Returns ``inv`` as text."""
    (inv / "group_vars" / "all").mkdir(parents=True)
    (inv / "group_vars" / "all" / "gpufleet.yml").write_text(
        "gpufleet_platform: kubeadm\ngpufleet_cluster_name: t\ngpufleet_addons_mode: standalone\n"
        "gpufleet_gpu_pools:\n  - {name: plain, gpu_type: t4, gpus_per_node: 1, node_group: gpu_pool_plain, min_nodes: 1}\n")
    (inv / "hosts.yml").write_text(
        "all:\n  children:\n    gpufleet_controller:\n      hosts:\n        localhost:\n"
        "          ansible_connection: local\n          ansible_python_interpreter: \"{{ ansible_playbook_python }}\"\n"
        "    gpu_nodes:\n      children:\n        gpu_pool_plain:\n          hosts:\n"
        "            h1: {gpufleet_node_name: gpu-a1}\n")
    return str(inv)
