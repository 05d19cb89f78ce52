# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""The one redaction point for every message that names a cluster connection.

A connection (the ``gpufleet_k8s_*`` values, or the kubernetes.core options built from them) can carry
secrets in several places: the bearer token (``api_key``), an inline kubeconfig (a mapping, or its text
given where a path belongs) with tokens, passwords and client keys in it, credentials in a URL
(``https://user:password@host``, a proxy), and a client's error text that quotes any of these. Every
message gpufleet builds about a connection goes through :func:`describe` (what the connection points at,
without a secret) and :func:`scrub` (a free text, such as the client's error, with every secret masked).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import json
import re

MASK = "********"

# Keys of a kubeconfig (users[].user, auth-provider config, exec env) whose values are secrets.
SECRET_KEYS = frozenset((
    "token", "password", "client-key-data", "client-key", "id-token", "refresh-token", "access-token",
    "access_token", "client-secret", "secret", "api_key", "apikey", "value",
))

# connection option (kubernetes.core) or gpufleet variable -> what it is
_SECRET_OPTIONS = ("api_key", "gpufleet_k8s_api_key", "password", "proxy_headers")
_URL_OPTIONS = ("host", "proxy", "gpufleet_k8s_host", "gpufleet_k8s_proxy")
_KUBECONFIG_OPTIONS = ("kubeconfig", "gpufleet_k8s_kubeconfig")

# credentials inside any URL of a text, and a bearer token in a quoted header
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s'\"]+@")
_BEARER = re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{4,}")


def inline_kubeconfig(value):
    """The parsed mapping when ``value`` is a kubeconfig given inline (a mapping, or its JSON/YAML text where a
    path belongs); None for a path (or nothing)."""
    if isinstance(value, dict):
        return value
    if not isinstance(value, str):
        return None if value in (None, "") else {"_": value}
    text = value.strip()
    if text.startswith("{"):
        try:
            parsed = json.loads(text)
        except ValueError:
            try:  # a mapping turned into its Python text by a ``type: path``/``str`` option
                parsed = ast.literal_eval(text)
            except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
                parsed = None
        return dict(parsed, _=text) if isinstance(parsed, dict) else {"_": text}
    if "\n" in text or text.startswith(("apiVersion:", "kind:", "clusters:", "users:")):
        return {"_": text}
    return None


def _leaves(value, secret_key=False):
    """Secret string leaves of a kubeconfig mapping: values under SECRET_KEYS, at any depth."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, secret_key or str(key).lower() in SECRET_KEYS)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _leaves(item, secret_key)
    elif secret_key and value not in (None, "") and not isinstance(value, bool):
        yield str(value)


def url_userinfo(url):
    """``user:password`` of a URL with credentials, else ``""``."""
    match = _URL_USERINFO.search(str(url or ""))
    return match.group(0)[len(match.group(1)):-1] if match else ""


def strip_userinfo(url):
    """``url`` with its credentials replaced by the mask."""
    return _URL_USERINFO.sub(lambda m: m.group(1) + MASK + "@", str(url or ""))


def secrets(conn):
    """Every secret string of the connection ``conn`` (kubernetes.core options or ``gpufleet_k8s_*`` values),
    longest first, so that a scrub never leaves a tail of a longer one."""
    out = set()
    for key, value in (conn or {}).items():
        if key in _SECRET_OPTIONS and value not in (None, ""):
            out.add(json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else str(value))
            if isinstance(value, dict):
                out.update(str(v) for v in value.values() if v not in (None, ""))
        elif key in _URL_OPTIONS and url_userinfo(value):
            out.add(url_userinfo(value))
        elif key in _KUBECONFIG_OPTIONS:
            inline = inline_kubeconfig(value)
            if inline is not None:
                out.update(_leaves(inline, False))
                if isinstance(value, str):
                    out.add(value)
                    out.add(value.strip())
                else:
                    out.add(str(value))
                    out.add(json.dumps(value, sort_keys=True))
    # a one- to three-character value would mask every such letter of a message
    return sorted((s for s in out if len(s) >= 4), key=len, reverse=True)


def scrub(text, conn=None, extra=()):
    """``text`` with every secret of ``conn`` (and the strings in ``extra``) masked, credentials in any URL
    masked and any bearer token masked."""
    text = "" if text is None else str(text)
    for secret in list(secrets(conn)) + sorted((str(s) for s in extra if s and len(str(s)) >= 4), key=len,
                                               reverse=True):
        text = text.replace(secret, MASK)
    text = _URL_USERINFO.sub(lambda m: m.group(1) + MASK + "@", text)
    return _BEARER.sub(lambda m: m.group(1) + MASK, text)


def describe(conn):
    """What the connection ``conn`` points at, for a message: the API server (credentials masked), the
    kubeconfig path (an inline kubeconfig is named as such, never shown) and the context."""
    conn = conn or {}
    context = conn.get("context") or conn.get("gpufleet_k8s_context")
    host = conn.get("host") or conn.get("gpufleet_k8s_host")
    kubeconfig = conn.get("kubeconfig") or conn.get("gpufleet_k8s_kubeconfig")
    if host:
        return "API server %s" % scrub(strip_userinfo(host), conn)
    if kubeconfig:
        where = ("an inline kubeconfig (not shown)" if inline_kubeconfig(kubeconfig) is not None
                 else "kubeconfig %s" % scrub(kubeconfig, conn))
        return "%s%s" % (where, ", context %s" % scrub(context, conn) if context else "")
    if context:
        return "context %s of the default kubeconfig" % scrub(context, conn)
    return "the client's default (in-cluster config, else $KUBECONFIG or ~/.kube/config)"
