# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Where rendered output goes, and how it gets there in one step.

``resolve_build_dir`` confines the output: the default ``<repository>/build/<inventory name>``
(the inventory name is one safe path component), anywhere below ``<repository>/build/``, or a
directory the user names that is dedicated to gpufleet: a new one (its parent exists; gpufleet
creates it and marks it with ``.gpufleet-build``), an empty one, or one holding that mark. The
repository itself, its parents, system directories and any other directory that holds files
are refused, so gpufleet never writes, walks or deletes outside its own output.

``stage`` and ``publish`` make a run all-or-nothing: every stage renders into a staging copy of
the build directory (a sibling, so the swap is a rename on one file system) and ``publish``
swaps it in only when the whole run succeeded; a failed run leaves the build directory
byte-identical (the staging copy is replaced by the next run).

Symbolic links (issue 30 item 4): git stores them and GitOps users commit build/, so a pulled build
directory may hold one (``gitops -> /somewhere``). gpufleet never follows a link inside its output:
preflight refuses a build directory that is reached through a link (the default
``build/<inventory>``) or holds one anywhere, naming each; ``stage``, ``publish`` and every writer
(files.py, render.py, gitops.py) refuse again before they change anything.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import filecmp
import os
import re
import shutil

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.files import (
    LINK_ADVICE, first_link, links_under, refuse_links)

MARKER = ".gpufleet-build"
MARKER_TEXT = ("This directory holds gpufleet's rendered output; gpufleet replaces its content on every run.\n"
               "Do not keep other files here.\n")
STAGING_SUFFIX = ".gpufleet-staging"
OLD_SUFFIX = ".gpufleet-old"
INVENTORY_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}\Z")
# Never an output directory, nor anything below them.
SYSTEM_TREES = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/proc", "/sbin", "/sys", "/usr")
# Never an output directory themselves (their sub-directories may be).
SYSTEM_DIRS = ("/", "/home", "/media", "/mnt", "/opt", "/root", "/run", "/srv", "/tmp", "/var", "/var/lib",
               "/var/tmp")


def inventory_name_error(name):
    if not isinstance(name, str) or not INVENTORY_NAME.match(name) or name in (".", ".."):
        return ("%r is not allowed: it names the folder build/<name>; use 1-100 letters, digits, '.', '_' and '-', "
                "starting with a letter or digit (no '/' or '..')" % (name,))
    return None


def _under(path, root):
    return path == root or path.startswith(root.rstrip("/") + "/")


def _listing(path):
    try:
        return os.listdir(path)
    except OSError:
        return None


def resolve_build_dir(build_dir, inventory_name, repo_root):
    """Return ``(path, [(variable, message)])``: the real path the run writes to, or the refusals."""
    problems = []
    repo = os.path.realpath(repo_root)
    reason = inventory_name_error(inventory_name)
    if not build_dir:
        if reason:
            problems.append(("gpufleet_inventory_name", reason))
            return None, problems
        return os.path.join(repo, "build", inventory_name), problems
    if not isinstance(build_dir, str) or "\n" in build_dir or "\0" in build_dir:
        return None, [("gpufleet_build_dir", "%r is not a directory path; use an absolute path or one relative to "
                       "the repository" % (build_dir,))]
    path = os.path.realpath(os.path.join(repo, os.path.expanduser(build_dir)))
    allowed = ("use a directory below %s/build/, a new directory (its parent must exist), an empty one, or one "
               "gpufleet wrote before (it holds %s)" % (repo, MARKER))
    if path in SYSTEM_DIRS or any(_under(path, t) for t in SYSTEM_TREES) or \
            path == os.path.realpath(os.path.expanduser("~")):
        # /tmp or / can also hold the repository (a clone in /tmp): say both
        also = ", and is the repository or one of its parents" if _under(repo, path) else ""
        problems.append(("gpufleet_build_dir", "%r (%s) is a system or home directory%s; gpufleet would write, list "
                         "and delete files there; %s" % (build_dir, path, also, allowed)))
    elif _under(repo, path):
        problems.append(("gpufleet_build_dir", "%r (%s) is the repository or one of its parents; %s"
                         % (build_dir, path, allowed)))
    elif path == os.path.join(repo, "build"):
        problems.append(("gpufleet_build_dir", "%r (%s) is the folder of every inventory's output; %s"
                         % (build_dir, path, allowed)))
    elif _under(path, os.path.join(repo, "build")):
        pass
    elif os.path.lexists(path):
        entries = _listing(path) if os.path.isdir(path) else None
        if entries is None:
            problems.append(("gpufleet_build_dir", "%r (%s) exists and is not a readable directory; %s"
                             % (build_dir, path, allowed)))
        elif entries and MARKER not in entries:
            problems.append(("gpufleet_build_dir", "%r (%s) already holds other files (%s) and is not marked as "
                             "gpufleet's output (%s); %s" % (build_dir, path, ", ".join(sorted(entries)[:5]),
                                                             MARKER, allowed)))
    elif not os.path.isdir(os.path.dirname(path)):
        problems.append(("gpufleet_build_dir", "%r: the parent directory %s does not exist; %s"
                         % (build_dir, os.path.dirname(path), allowed)))
    return (None if problems else path), problems


def needs_marker(path, repo_root):
    """Output outside <repository>/build/ carries the mark that makes it gpufleet's."""
    return not _under(path, os.path.join(os.path.realpath(repo_root), "build"))


def staging_path(path):
    return os.path.join(os.path.dirname(path), "." + os.path.basename(path) + STAGING_SUFFIX)


def _remove_tree(path):
    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)


def link_problem(path):
    """Why the build directory ``path`` cannot be used because of symbolic links, or None: ``path`` is
    reached through a link, or a link lies anywhere below it (each named, with its target)."""
    found = first_link(path)
    if found:
        return "%s is a symbolic link (to %s); %s" % (found, os.readlink(found), LINK_ADVICE)
    if not os.path.isdir(path):
        return None
    links = links_under(path)
    if not links:
        return None
    named = ", ".join("%s -> %s" % (os.path.join(path, rel), os.readlink(os.path.join(path, rel)))
                      for rel in links[:5])
    more = " and %d more" % (len(links) - 5) if len(links) > 5 else ""
    return "%s holds symbolic links (%s%s); %s" % (path, named, more, LINK_ADVICE)


def stage(path, marker=False):
    """Fresh staging copy of ``path`` (empty when ``path`` does not exist yet); returns its path.
    A build directory with symbolic links is refused (GpufleetError) before anything changes."""
    reason = link_problem(path)
    if reason:
        raise GpufleetError("gpufleet_build_dir: " + reason)
    staging = staging_path(path)
    _remove_tree(staging)
    parent = os.path.dirname(path)
    if not os.path.isdir(parent):
        os.makedirs(parent)
    if os.path.isdir(path):
        shutil.copytree(path, staging, symlinks=True)
    else:
        os.mkdir(staging, 0o755)
    if marker:
        marker_path = os.path.join(staging, MARKER)
        if not os.path.isfile(marker_path):
            with open(marker_path, "w") as handle:
                handle.write(MARKER_TEXT)
    return staging


def _same_tree(a, b):
    if not os.path.isdir(a) or not os.path.isdir(b):
        return False
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only or cmp.funny_files:
        return False
    _match, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    if mismatch or errors:
        return False
    for name in cmp.common_files:
        if os.stat(os.path.join(a, name)).st_mode != os.stat(os.path.join(b, name)).st_mode:
            return False
    return all(_same_tree(os.path.join(a, d), os.path.join(b, d)) for d in cmp.common_dirs)


def publish(path):
    """Swap the staging copy in. Returns True when the build directory changed."""
    staging = staging_path(path)
    if not os.path.isdir(staging):
        return False
    refuse_links(staging, tree=True)
    if _same_tree(staging, path) or (not os.path.lexists(path) and set(os.listdir(staging)) <= {MARKER}):
        # unchanged, or a run that rendered nothing (nodes, validate) into a directory not there yet
        shutil.rmtree(staging)
        return False
    old = os.path.join(os.path.dirname(path), "." + os.path.basename(path) + OLD_SUFFIX)
    _remove_tree(old)
    if os.path.isdir(path):
        os.rename(path, old)
    os.rename(staging, path)
    _remove_tree(old)
    return True


def check(params, plan, problems):
    """Preflight: the build directory and the inventory name. Sets ``plan['build_dir']`` (the real
    path) and ``plan['build_dir_marker']``. Needs ``params['inventory']`` {name, repo_root}."""
    inventory = params.get("inventory") or {}
    if not inventory.get("repo_root"):
        return
    extra = params.get("extra") or {}
    path, found = resolve_build_dir(extra.get("gpufleet_build_dir") or "", inventory.get("name"),
                                    inventory["repo_root"])
    for var, msg in found:
        problems.error(var, msg)
    reason = link_problem(path) if path else None
    if reason:
        problems.error("gpufleet_build_dir", reason)
        return
    if path:
        plan["build_dir"] = path
        plan["build_dir_marker"] = needs_marker(path, inventory["repo_root"])


def mark(path):
    """Write the mark into an existing output directory that lacks it. Returns True when written."""
    marker_path = os.path.join(path, MARKER)
    refuse_links(path, [MARKER])
    if not os.path.isdir(path) or os.path.exists(marker_path):
        return False
    with open(marker_path, "w") as handle:
        handle.write(MARKER_TEXT)
    return True


def project_dir(playbook_dir, cwd):
    """The project directory: what a relative ``gpufleet_build_dir`` and the default
    ``build/<inventory name>`` are relative to, whatever the layout gpufleet is installed in.

    - a playbook of an installed collection (``ansible-playbook gpufleet.k8s.site``, its path lies
      below an ``ansible_collections`` folder): the directory ``ansible-playbook`` runs in (``cwd``),
      never the collection's own folder;
    - a playbook in a ``playbooks/`` folder (a clone's ``playbooks/nodes.yml``): the folder above it;
    - any other playbook (a clone's ``site.yml``, a project's own playbook): its own directory.
    """
    path = os.path.realpath(playbook_dir)
    if "ansible_collections" in path.split(os.sep):
        return os.path.realpath(cwd)
    if os.path.basename(path) == "playbooks":
        return os.path.dirname(path)
    return path
