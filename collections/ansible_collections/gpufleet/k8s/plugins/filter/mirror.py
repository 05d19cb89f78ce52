# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Filters for air-gapped fleets: pull an image or download a URL through the configured mirror."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.mirror_urls import mirror_image, mirror_url


def gpufleet_mirror_image(ref, prefix):
    """``nvcr.io/nvidia/x:1`` -> ``<prefix>/nvidia/x:1`` when ``prefix`` is set (upstream registries only)."""
    return mirror_image(ref, prefix or "")


def gpufleet_mirror_url(url, base):
    """``https://HOST/PATH`` -> ``<base>/HOST/PATH`` when ``base`` is set (upstream hosts only)."""
    return mirror_url(url, base or "")


class FilterModule(object):
    def filters(self):
        return {"mirror_image": gpufleet_mirror_image, "mirror_url": gpufleet_mirror_url}
