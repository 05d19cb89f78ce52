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
_LAZY = (_LAZY_DICT, _LAZY_LIST)


class _MayBeTemplate(Exception):
    """Raised inside ``_template_free_copy`` at the first part that could be a template."""


def plain(value):
    """``value`` with every mapping, sequence and scalar turned into its built-in type."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, dict):
        if type(value).__name__ == _LAZY_DICT:
            return {plain(key): _lazy_item(value, key, raw) for key, raw in dict.items(value)}
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if type(value).__name__ == _LAZY_LIST:
            return [_lazy_item(value, index, raw) for index, raw in enumerate(list.__iter__(value))]
        return [plain(v) for v in value]
    if isinstance(value, str):
        return str.__str__(value)  # exact str: 2.18's AnsibleUnsafeText returns itself from str()
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return value


def template_free_copy(value):
    """``(True, plain copy)`` when no string at or below ``value`` contains ``{`` (templating it would
    return it as it is) and every container below is a built-in dict, list or tuple of known scalars;
    ``(False, None)`` otherwise. One walk."""
    try:
        return True, _template_free_copy(value, 0)
    except _MayBeTemplate:
        return False, None


# Exact built-in scalar types copied as they are (immutable); a subclass (Ansible's tagged str, int,
# ...) takes the general path, which returns the built-in type.
_EXACT_SCALARS = frozenset((bool, int, float, type(None)))


def _template_free_copy(value, depth):
    # The fast path: exact built-in types, with the items of a dict or list checked in one loop per
    # container (a 200-pool plan is some 10,000 nodes, walked by several filters per task).
    kind = type(value)
    if kind is str:
        if "{" in value:
            raise _MayBeTemplate()
        return value
    if kind is dict and depth <= 100:
        return dict(zip(_free_items(value.keys(), depth + 1), _free_items(value.values(), depth + 1)))
    if (kind is list or kind is tuple) and depth <= 100:
        return _free_items(value, depth + 1)
    if kind in _EXACT_SCALARS:
        return value
    return _template_free_copy_general(value, depth)


def _free_items(items, depth):
    """Template-free copies of ``items`` as a list: an exact str or scalar inline, anything else through
    ``_template_free_copy`` (which raises at the first part that could be a template)."""
    out = []
    for item in items:
        kind = type(item)
        if kind is str:
            if "{" in item:
                raise _MayBeTemplate()
        elif kind not in _EXACT_SCALARS:
            item = _template_free_copy(item, depth)
        out.append(item)
    return out


def _template_free_copy_general(value, depth):
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        if "{" in value:
            raise _MayBeTemplate()
        return str.__str__(value)  # exact str: 2.18's AnsibleUnsafeText returns itself from str()
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if depth > 100 or type(value).__name__ in _LAZY:
        raise _MayBeTemplate()
    if isinstance(value, dict):
        return {_template_free_copy(k, depth + 1): _template_free_copy(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_template_free_copy(v, depth + 1) for v in value]
    raise _MayBeTemplate()


def _lazy_item(container, key, raw):
    """One item of a lazy container: the raw item copied when it is template-free, else the item read
    through the container (which templates it)."""
    if type(raw).__name__ == _LAZY_VALUE and hasattr(raw, "value"):
        raw = raw.value
    free, copy = template_free_copy(raw)
    return copy if free else plain(container[key])
