# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""MIG facts per GPU product and GPU-instance placement, for mig_layout.py (standard library only: the gpu_mig
role installs this file beside mig_layout.py on the host for its boot-time unit).

Placing a mix: every GPU instance occupies consecutive memory slices and may start only at the slices its
profile allows; place() finds starts for a whole mix so that none overlap, or says it cannot be done.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# Profiles per product name while MIG is disabled (nvidia-smi mig -lgip lists nothing then), from
# NVIDIA's MIG user guide; the count is the most instances of that profile one GPU holds.
# Placements (NVIDIA's MIG user guide, "Supported MIG Profiles" and the ``nvidia-smi mig -lgipp`` output
# it shows): a GPU instance occupies ``size`` consecutive memory slices starting at one of ``starts``.
# A100/H100/H200/B200 have 8 memory slices; a 1g profile with 1/8 of the memory starts at 0-6, one with
# 1/4 (1g.10gb on A100-40GB, 1g.20gb, 1g.35gb, 1g.45gb) at 0, 2, 4, 6; 2g at 0, 2, 4; 3g at 0, 4 (4
# slices); 4g at 0 (4 slices); 7g takes all 8. A30 has 4: 1g at 0-3, 2g at 0, 2; 4g takes all 4.
_ONE = (1, (0, 1, 2, 3, 4, 5, 6))
_ONE_WIDE = (2, (0, 2, 4, 6))
_TWO = (2, (0, 2, 4))
_THREE = (4, (0, 4))
_FOUR = (4, (0,))
_SEVEN = (8, (0,))


def _eight_slices(one, one_wide, two, three, four, seven):
    # {profile: (most instances, memory slices, placement starts)} of an 8-memory-slice GPU
    return {one: (7,) + _ONE, one + "+me": (1,) + _ONE, one_wide: (4,) + _ONE_WIDE, two: (3,) + _TWO,
            three: (2,) + _THREE, four: (1,) + _FOUR, seven: (1,) + _SEVEN}


_CATALOG = (
    # (product name pattern, {profile: (most instances, memory slices, placement starts)})
    (r"H200", _eight_slices("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb")),
    (r"H100.*(80GB|HBM3|PCIe)|H800", _eight_slices("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb")),
    (r"A100.*80GB", _eight_slices("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb")),
    (r"A100", _eight_slices("1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb")),
    (r"A30", {"1g.6gb": (4, 1, (0, 1, 2, 3)), "1g.6gb+me": (1, 1, (0, 1, 2, 3)), "2g.12gb": (2, 2, (0, 2)),
              "2g.12gb+me": (1, 2, (0, 2)), "4g.24gb": (1, 4, (0,))}),
    (r"B200", _eight_slices("1g.23gb", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb")),
)


def _catalog(product_name):
    for pattern, profiles in _CATALOG:
        if re.search(pattern, product_name or ""):
            return profiles
    return None


def catalog_profiles(product_name):
    """{profile: most instances} NVIDIA documents for ``product_name``, or None when unknown."""
    profiles = _catalog(product_name)
    return None if profiles is None else dict((name, p[0]) for name, p in profiles.items())


def catalog_placements(product_name):
    """{profile: (memory slices, placement starts)} NVIDIA documents for ``product_name``, or None."""
    profiles = _catalog(product_name)
    return None if profiles is None else dict((name, (p[1], p[2])) for name, p in profiles.items())


def place(instances, placements):
    """A start slice for every GPU instance of ``instances`` (profile names) so that none overlap, as
    [(profile, start)] sorted by start, or None when the GPU cannot hold them together. Tries every
    placement (few: at most 7 instances of at most 7 starts each), the most constrained instance first."""
    order = sorted(instances, key=lambda p: (-placements[p][0], len(placements[p][1]), p))
    taken = set()
    chosen = []

    def fit(i):
        if i == len(order):
            return True
        size, starts = placements[order[i]]
        for start in starts:
            slices = set(range(start, start + size))
            if taken & slices:
                continue
            taken.update(slices)
            chosen.append((order[i], start))
            if fit(i + 1):
                return True
            chosen.pop()
            taken.difference_update(slices)
        return False
    return sorted(chosen, key=lambda c: (c[1], c[0])) if fit(0) else None


def counted(instances):
    counts = {}
    for profile in instances:
        counts[profile] = counts.get(profile, 0) + 1
    return ", ".join("%dx %s" % (counts[p], p) for p in sorted(counts))
