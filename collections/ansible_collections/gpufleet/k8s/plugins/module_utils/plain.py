# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Plain Python values for the filters.

Ansible 2.19 hands filters its lazy, tagged containers; copying one (``copy.deepcopy`` in the
renderers) re-creates every tag and costs milliseconds per value, which made a 200-pool render
take minutes. Filters convert their inputs once with ``plain`` and the logic works on dicts,
lists and strings.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def plain(value):
    """``value`` with every mapping, sequence and scalar turned into its built-in type."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return value
