"""``plain`` on Ansible's real lazy containers: the fast path (raw items, lazy access only for parts
that may be templates) gives what the item-by-item path gives, templates are still rendered, and
untrusted strings (facts) are still not. Runs a real ansible-playbook with a probe filter that
converts its argument both ways."""
import json
import textwrap

from ansible_run import CHECKOUT_PATHS, ansible

PROBE = '''
from ansible_collections.gpufleet.k8s.plugins.module_utils.core import plain as P


def slow(value):
    """The item-by-item conversion (every access through the lazy container)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, dict):
        return {slow(k): slow(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [slow(v) for v in value]
    return P.plain(value)


def probe(value):
    return {"type": type(value).__name__, "fast": P.plain(value), "slow": slow(value)}


class FilterModule(object):
    def filters(self):
        return {"probe": probe}
'''

PLAYBOOK = '''
- name: Hand lazy containers to a filter
  hosts: localhost
  gather_facts: false
  vars:
    inner: rendered
    data:
      plain: text
      braces: "a {literal} brace"
      number: 5
      ratio: 0.5
      flag: false
      nothing: null
      templated: "{{ inner }}-1"
      nested:
        - x
        - "{{ inner | upper }}"
        - {deep: "{{ 2 + 3 }}", keep: [1, 2, {k: v}]}
      list_of_pools: [{name: a, labels: {team: t1}}, {name: b, labels: {}}]
  tasks:
    - name: A fact whose string looks like a template (untrusted, never rendered)
      ansible.builtin.set_fact:
        fact_value: "{{ {'raw': '{' ~ '{ inner }' ~ '}', 'n': [1, {'m': none}]} }}"
    - name: Probe inventory-style vars
      ansible.builtin.debug:
        msg: "{{ data | probe }}"
    - name: Probe a fact
      ansible.builtin.debug:
        msg: "{{ fact_value | probe }}"
    - name: Probe a list
      ansible.builtin.debug:
        msg: "{{ data.nested | probe }}"
'''


def _run(tmp_path):
    (tmp_path / "filter_plugins").mkdir()
    (tmp_path / "filter_plugins" / "probe.py").write_text(PROBE)
    (tmp_path / "play.yml").write_text(textwrap.dedent(PLAYBOOK))
    proc = ansible("ansible-playbook", "-i", "localhost,", "-c", "local", "play.yml", cwd=tmp_path, timeout=120,
                   ANSIBLE_COLLECTIONS_PATH=CHECKOUT_PATHS["ANSIBLE_COLLECTIONS_PATH"], ANSIBLE_LOCALHOST_WARNING="0",
                   ANSIBLE_INVENTORY_UNPARSED_WARNING="0", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
                   ANSIBLE_CALLBACKS_ENABLED="gpufleet.k8s.preload_filters")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    plays = json.loads(proc.stdout)["plays"][0]["tasks"]
    return [task["hosts"]["localhost"]["msg"] for task in plays[1:]]


def test_fast_path_equals_item_by_item_on_real_lazy_containers(tmp_path):
    data, fact, nested = _run(tmp_path)
    assert data["type"] == "_AnsibleLazyTemplateDict"        # the case the fast path is for
    assert nested["type"] == "_AnsibleLazyTemplateList"
    for probe in (data, fact, nested):
        assert probe["fast"] == probe["slow"]
    assert data["fast"] == {
        "plain": "text", "braces": "a {literal} brace", "number": 5, "ratio": 0.5, "flag": False, "nothing": None,
        "templated": "rendered-1",
        "nested": ["x", "RENDERED", {"deep": 5, "keep": [1, 2, {"k": "v"}]}],
        "list_of_pools": [{"name": "a", "labels": {"team": "t1"}}, {"name": "b", "labels": {}}]}
    assert fact["fast"] == {"raw": "{{ inner }}", "n": [1, {"m": None}]}   # a fact is data, not a template
    assert nested["fast"] == ["x", "RENDERED", {"deep": 5, "keep": [1, 2, {"k": "v"}]}]


def test_template_free_copy():
    from ansible_collections.gpufleet.k8s.plugins.module_utils.core.plain import template_free_copy
    value = {"a": [1, "x", None, 0.5, True], "b": {"c": "d"}, "t": (1, 2)}
    assert template_free_copy(value) == (True, {"a": [1, "x", None, 0.5, True], "b": {"c": "d"}, "t": [1, 2]})
    assert template_free_copy({"a": ["{{ x }}"]}) == (False, None)
    assert template_free_copy({"{{ k }}": 1}) == (False, None)
    assert template_free_copy(object()) == (False, None)          # unknown types take the templating path


class _Tagged(str):
    """Stands in for Ansible's tagged str (a str subclass)."""


class _TaggedInt(int):
    pass


def test_template_free_copy_fast_path_matches_the_general_walk():
    from ansible_collections.gpufleet.k8s.plugins.module_utils.core.plain import (
        _template_free_copy_general, template_free_copy)
    value = {"pools": [{"name": _Tagged("a"), "n": _TaggedInt(2), "t": ("x", None), "deep": [[{"k": 1.5}]]}],
             _Tagged("key"): True, "s": "plain"}
    free, copy = template_free_copy(value)
    assert free and copy == _template_free_copy_general(value, 0)
    # subclasses come back as the built-in types, tuples as lists
    assert type(copy["pools"][0]["name"]) is str and type(copy["pools"][0]["n"]) is int
    assert copy["pools"][0]["t"] == ["x", None] and type(next(iter(k for k in copy if k == "key"))) is str
    # a template anywhere below, in a key or an item at any depth, sends the value to the templar
    for bad in ({"a": [{"b": ["{{ x }}"]}]}, {"a": {_Tagged("{{ k }}"): 1}}, [("{{ x }}",)], {"a": {"b": object()}}):
        assert template_free_copy(bad) == (False, None), bad
    deep = []
    for _ in range(120):
        deep = [deep]
    assert template_free_copy(deep) == (False, None)               # past depth 100: the templar decides
