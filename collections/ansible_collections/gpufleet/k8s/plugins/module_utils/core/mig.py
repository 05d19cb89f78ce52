# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""MIG profiles per GPU type: how many instances of a profile fit one GPU.

From NVIDIA's MIG user guide (supported profiles tables). Used to predict what a node
advertises (validation) and to refuse profiles a GPU does not have (preflight).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

MIG_PROFILES = {
    "a100-40gb": {"1g.5gb": 7, "1g.10gb": 4, "2g.10gb": 3, "3g.20gb": 2, "4g.20gb": 1, "7g.40gb": 1},
    "a100-80gb": {"1g.10gb": 7, "1g.20gb": 4, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1, "7g.80gb": 1},
    "h100-80gb": {"1g.10gb": 7, "1g.20gb": 4, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1, "7g.80gb": 1},
    "h200-141gb": {"1g.18gb": 7, "1g.35gb": 4, "2g.35gb": 3, "3g.71gb": 2, "4g.71gb": 1, "7g.141gb": 1},
    "b200": {"1g.23gb": 7, "1g.45gb": 4, "2g.45gb": 3, "3g.90gb": 2, "4g.90gb": 1, "7g.180gb": 1},
}


def instances_per_gpu(gpu_type, profile):
    """Instances of ``profile`` one GPU of ``gpu_type`` holds, or None if it has no such profile."""
    return MIG_PROFILES.get(gpu_type, {}).get(profile)
