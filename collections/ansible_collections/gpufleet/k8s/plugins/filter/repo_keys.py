# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Filters for the node roles' repository signing keys: which key, and whether the downloaded one may be written."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.k8s.plugins.module_utils.core import repo_keys


def gpufleet_repo_key_problem(content, spec, encoding="text"):
    """Why the downloaded key ``content`` must not be written for ``spec`` (see repo_keys.key_problem), or ""."""
    if encoding == "base64":
        content = base64.b64decode(content or "")
    return repo_keys.key_problem(content, spec)


def gpufleet_repo_keyring(content, spec):
    """The keyring text gpufleet writes for the checked key ``content``: its packets re-armored as one public
    key block (repo_keys.keyring_text); an error when the key would be refused."""
    try:
        return repo_keys.keyring_text(content, spec)
    except repo_keys.KeyFormatError as exc:
        raise AnsibleFilterError(str(exc))


def gpufleet_toolkit_repo_key(values):
    """URL or content of the libnvidia-container key and the fingerprint it must have (repo_keys.toolkit_key)."""
    return repo_keys.toolkit_key(values)


class FilterModule(object):
    def filters(self):
        return {"repo_key_problem": gpufleet_repo_key_problem,
                "repo_keyring": gpufleet_repo_keyring, "toolkit_repo_key": gpufleet_toolkit_repo_key}
