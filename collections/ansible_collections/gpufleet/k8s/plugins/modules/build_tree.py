#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: build_tree
short_description: Stage the build directory for a run and swap the result in when the run succeeded
version_added: "0.1.0"
description:
  - C(state=staged) makes a fresh staging copy of I(path) beside it (C(.<name>.gpufleet-staging)); the
    run's stages render into that copy. It reports no change (the copy is scratch space).
  - C(state=published) replaces I(path) with the staging copy when they differ (a rename on one file
    system) and removes the copy; when they are equal I(path) is left as it was. Without a staging
    copy (apply mode renders in place) it only adds the mark when I(marker) asks for it.
  - A run that fails before publishing leaves I(path) byte-identical; the next run replaces the
    leftover staging copy.
  - I(path) must already have passed gpufleet's preflight (C(gpufleet_build_dir) confinement).
  - A symbolic link on the way to I(path) or anywhere inside it is refused, naming it, before
    anything changes; gpufleet never follows a link inside its output.
author:
  - gpufleet maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.k8s.attributes.no_diff
options:
  path:
    description: The build directory (real path, as preflight resolved it).
    type: path
    required: true
  state:
    description: C(staged) to make the staging copy, C(published) to swap it in.
    type: str
    choices: [staged, published]
    default: staged
  marker:
    description: Write the C(.gpufleet-build) mark into the tree (output outside the repository's build/).
    type: bool
    default: false
attributes:
  check_mode:
    details: In check mode nothing is copied or swapped; C(staged) returns I(path) itself.
"""

EXAMPLES = r"""
- name: Stage the build directory
  gpufleet.k8s.build_tree:
    path: /srv/gitops/cluster-a
    state: staged
  register: staged

- name: Swap the rendered tree in
  gpufleet.k8s.build_tree:
    path: /srv/gitops/cluster-a
    state: published
"""

RETURN = r"""
staging:
  description: The directory the run renders into (I(path) itself in check mode).
  returned: state=staged
  type: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.k8s.plugins.module_utils.core import output_tree
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError


def argspec():
    return dict(
        path=dict(type="path", required=True),
        state=dict(type="str", choices=["staged", "published"], default="staged"),
        marker=dict(type="bool", default=False),
    )


def run(module):
    """The module's work on ``module`` (an AnsibleModule, or the in-process stand-in of the action
    plugin when the task runs on the controller); ends with ``exit_json``/``fail_json``."""
    path = module.params["path"]
    try:
        if module.params["state"] == "staged":
            if module.check_mode:
                module.exit_json(changed=False, staging=path)
            module.exit_json(changed=False, staging=output_tree.stage(path, module.params["marker"]))
        if module.check_mode:
            module.exit_json(changed=False)
        if os.path.isdir(output_tree.staging_path(path)):
            module.exit_json(changed=output_tree.publish(path))
        module.exit_json(changed=output_tree.mark(path) if module.params["marker"] else False)
    except GpufleetError as exc:
        module.fail_json(msg=exc.msg)
    except OSError as exc:
        module.fail_json(msg="gpufleet_build_dir: could not %s %s (%s); check the directory's permissions and free "
                             "space" % ("stage" if module.params["state"] == "staged" else "publish into", path,
                                        exc.strerror or exc))


def main():
    run(AnsibleModule(argument_spec=argspec(), supports_check_mode=True))


if __name__ == "__main__":
    main()
