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
