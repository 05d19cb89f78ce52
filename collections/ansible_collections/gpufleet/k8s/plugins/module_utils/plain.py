# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Plain Python values for the filters.

Ansible 2.19 hands filters its lazy, tagged containers; copying one (``copy.deepcopy`` in the
renderers) re-creates every tag and costs milliseconds per value, which made a 200-pool render
take minutes. Filters convert their inputs once with ``plain`` and the logic works on dicts,
lists and strings.

Reading a lazy container item by item is itself slow: every access asks the templar whether the
item is a template and wraps nested containers in new lazy containers (0.15-0.25 s for the plan
of a 200-pool fleet, several times per task). ``plain`` therefore reads the raw items a lazy
container holds and goes through the lazy access only for the parts that could be templates (a
string with a ``{`` anywhere below them). A part without one renders to itself, so the result is
the same; ``tests/unit/test_plain_lazy.py`` checks that against Ansible's own templar.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# Ansible's lazy containers (ansible._internal._templating._lazy_containers) and the wrapper they
# keep around an item that has not been templated yet. Matched by name: module_utils must not import
# the controller's internals, and an unknown layout simply takes the item-by-item path.
_LAZY_DICT = "_AnsibleLazyTemplateDict"
_LAZY_LIST = "_AnsibleLazyTemplateList"
_LAZY_VALUE = "_LazyValue"
_BUILTIN_SCALARS = (str, int, float, bool, type(None))


def plain(value):
    """``value`` with every mapping, sequence and scalar turned into its built-in type."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, dict):
        if type(value).__name__ == _LAZY_DICT:
            return _plain_lazy_dict(value)
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if type(value).__name__ == _LAZY_LIST:
            return _plain_lazy_list(value)
        return [plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return value


def _unwrapped(raw):
    """The value a lazy container stores for one item: the original behind a not-yet-templated
    wrapper, or ``None`` (meaning: use the lazy access) when the stored object is not understood."""
    if type(raw).__name__ == _LAZY_VALUE:
        raw = getattr(raw, "value", None)
        if raw is None:
            return None, False
    return raw, True


def template_free(value, depth=0):
    """True when no string at or below ``value`` contains ``{`` (so templating it returns it as is),
    and every container below is a built-in list, tuple or dict of known scalars."""
    if isinstance(value, bool) or value is None:
        return True
    if isinstance(value, str):
        return "{" not in value
    if isinstance(value, (int, float)):
        return True
    if depth > 100:
        return False
    if isinstance(value, dict):
        if type(value).__name__ in (_LAZY_DICT, _LAZY_LIST):
            return False
        return all(template_free(k, depth + 1) and template_free(v, depth + 1) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        if type(value).__name__ in (_LAZY_DICT, _LAZY_LIST):
            return False
        return all(template_free(v, depth + 1) for v in value)
    return False


def _plain_lazy_dict(value):
    result = {}
    for key, raw in dict.items(value):
        item, known = _unwrapped(raw)
        if known and template_free(item):
            result[plain(key)] = plain(item)
        else:
            result[plain(key)] = plain(value[key])
    return result


def _plain_lazy_list(value):
    result = []
    for index, raw in enumerate(list.__iter__(value)):
        item, known = _unwrapped(raw)
        if known and template_free(item):
            result.append(plain(item))
        else:
            result.append(plain(value[index]))
    return result
