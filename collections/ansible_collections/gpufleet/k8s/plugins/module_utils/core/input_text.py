# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Text that reaches a rendered file: one line of printable characters (issue 30 item 2).

A YAML comment ends at a line break, and YAML 1.1 readers (PyYAML, the go-yaml that kubectl, Argo CD
and Flux read manifests with) count NEL (U+0085) and the Unicode line and paragraph separators
(U+2028, U+2029) as line breaks besides LF and CR. An input holding one, pasted into a comment,
turns the rest of the value into YAML: a ``gitops_repo_url`` with a line break added a
ClusterRoleBinding to the Argo CD Application file. Node files (apt sources, modprobe options)
are line-based too.

``text_error`` is the one test: every control character (Unicode category Cc: C0, DEL, C1), every
format character (Cf: zero-width and bidirectional controls, BOM), the line and paragraph separators
(Zl, Zp) and lone surrogates (Cs) are refused. ``check`` (registered in preflight) applies it to
every string of every input that is set, keys and values at any depth, naming the variable path,
before anything changes. Inputs whose values are data the YAML dumper carries (Helm values
overrides, k8s_apply objects) or a multi-line text by nature (an armored key) may hold line feeds,
carriage returns and tabs in their string values, nothing else.

Messages never repeat the value: some of these inputs are credentials.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import unicodedata

REFUSED_CATEGORIES = ("Cc", "Cf", "Zl", "Zp", "Cs")
MULTI_LINE = "\n\r\t"
# Inputs whose string values may span lines (keys may not): data written through the YAML dumper,
# or text that is multi-line by nature.
MULTI_LINE_VALUES = {
    "gpu_operator_values_overrides": "Helm values, written through the YAML dumper",
    "k8s_apply_objects": "Kubernetes objects, written through the YAML dumper",
    "nvidia_container_toolkit_repo_key_content": "an ASCII-armored key",
}
# AWX survey answers (textarea questions hold YAML lists and mappings): roles/gpufleet_survey parses them
# into the variables they stand for, which this check then reads like any other input.
MULTI_LINE_PREFIXES = ("gpufleet_survey_",)
TOP_LEVEL = (("platform", "gpufleet_platform"), ("cluster_name", "gpufleet_cluster_name"),
             ("addons_mode", "gpufleet_addons_mode"), ("pools", "gpufleet_gpu_pools"))
_NAMES = {"\n": "line feed", "\r": "carriage return", "\t": "tab", "\x0b": "vertical tab", "\x0c": "form feed",
          "\x00": "NUL", "\x1b": "escape", "\x7f": "delete", "\x85": "next line", "\u2028": "line separator",
          "\u2029": "paragraph separator", "\ufeff": "byte order mark"}
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")


def describe(char):
    """``U+000A (line feed)``."""
    name = _NAMES.get(char)
    if name is None:
        try:
            name = unicodedata.name(char).lower()
        except ValueError:
            name = "control character"
    return "U+%04X (%s)" % (ord(char), name)


def bad_char(text, allowed=""):
    """(index, character) of the first character of ``text`` that is refused, or None."""
    for index, char in enumerate(text):
        if char not in allowed and unicodedata.category(char) in REFUSED_CATEGORIES:
            return index, char
    return None


def text_error(text, allowed=""):
    """Why ``text`` cannot be written into a line of a rendered file, or None. Never repeats ``text``."""
    found = bad_char(text, allowed)
    if found is None:
        return None
    index, char = found
    return ("holds %s at character %d; use %s" % (
        describe(char), index + 1,
        "printable text (line feeds, carriage returns and tabs allowed; no other control, format or "
        "separator characters)" if allowed else
        "one line of printable text: no line breaks (LF, CR, NEL U+0085, U+2028, U+2029) and no other "
        "control or format characters"))


def _child(var, key):
    if isinstance(key, str) and _KEY.match(key):
        return "%s.%s" % (var, key)
    return "%s[%r]" % (var, key)


def walk_errors(var, value, allowed=""):
    """[(variable path, reason)] for every refused string in ``value`` (keys: one line; string
    values: ``allowed`` control characters too)."""
    out = []
    if isinstance(value, str):
        reason = text_error(value, allowed)
        if reason:
            out.append((var, reason))
    elif isinstance(value, dict):
        for key in sorted(value, key=str):
            if isinstance(key, str):
                reason = text_error(key)
                if reason:
                    out.append((var, "key %r %s" % (key, reason)))
                    continue
            out += walk_errors(_child(var, key), value[key], allowed)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            out += walk_errors("%s[%d]" % (var, index), item, allowed)
    return out


def input_errors(params):
    """[(variable path, reason)] for every set input of ``params`` (preflight's arguments)."""
    out = []
    extra = params.get("extra") or {}
    for var in sorted(extra, key=str):
        allowed = MULTI_LINE if var in MULTI_LINE_VALUES or str(var).startswith(MULTI_LINE_PREFIXES) else ""
        out += walk_errors(var, extra[var], allowed)
    for key, var in TOP_LEVEL:
        if var not in extra and key in params:
            out += walk_errors(var, params[key])
    return out


def check(params, plan, problems):
    """Preflight: every string of every set input is one line of printable text (except the string
    values of MULTI_LINE_VALUES), keys included."""
    for var, reason in input_errors(params):
        problems.error(var, reason)
