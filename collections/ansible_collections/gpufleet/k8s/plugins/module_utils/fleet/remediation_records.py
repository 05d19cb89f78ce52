# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""The remediation record gpufleet keeps on a Node it acts on (annotation ``gpufleet.io/gpu-remediation``), and
whether a record found there is gpufleet's (issue 39).

Anyone who may patch Nodes can write the annotation, several agents gpufleet installs among them. So a record
carries a MAC: HMAC-SHA256 over its canonical JSON (without the MAC), the Node's name and the Node's UID, keyed by
the Secret ``gpufleet-system/gpufleet-remediation-key`` (created by the first run that acts; docs/security.md).
A record without gpufleet's MAC for this very Node is ignored. A cordon is gpufleet's only when its trusted record
says so and no one else has written ``spec.unschedulable`` since (managedFields).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import hmac
import json

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError

RECORD_ANNOTATION = "gpufleet.io/gpu-remediation"
# the record's MAC (HMAC-SHA256, key in the Secret below; docs/security.md): a record without gpufleet's MAC
# for its Node is ignored
MAC_KEY = "mac"
RECORD_KEY_NAMESPACE = "gpufleet-system"
RECORD_KEY_SECRET = "gpufleet-remediation-key"
FIELD_MANAGER = "gpufleet"  # pools/node_ownership.py FIELD_MANAGER: the manager gpu_remediate patches Nodes as


def record_of(node):
    """The remediation record on a Node as written (a dict), or None: no annotation, or not a JSON object.
    Not yet trusted: :func:`trusted_record` checks its MAC."""
    raw = ((node.get("metadata") or {}).get("annotations") or {}).get(RECORD_ANNOTATION)
    if not raw:
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _mac_input(record, node):
    meta = node.get("metadata") or {}
    body = dict((k, v) for k, v in record.items() if k != MAC_KEY)
    return "\n".join([json.dumps(body, sort_keys=True, separators=(",", ":")), str(meta.get("name") or ""),
                      str(meta.get("uid") or "")]).encode("utf-8")


def record_mac(record, node, key):
    """HMAC-SHA256 (hex) of the record's canonical JSON (without its ``mac``), the Node's name and its UID."""
    return hmac.new(key, _mac_input(record, node), hashlib.sha256).hexdigest()


def signed(record, node, key):
    """``record`` with its MAC for ``node``; the key is gpufleet's (Secret RECORD_KEY_SECRET)."""
    if not key:
        raise GpufleetError("Node %s: no remediation key to sign the record with"
                            % (node.get("metadata") or {}).get("name"))
    out = dict((k, v) for k, v in record.items() if k != MAC_KEY)
    out[MAC_KEY] = record_mac(out, node, key)
    return out


def trusted_record(node, key):
    """(record, why ignored): the record when its MAC is gpufleet's for this very Node (name and UID), else
    (None, the reason it is ignored; '' when there is no record). Anyone who may patch Nodes can write the
    annotation: only a record gpufleet signed says what gpufleet did."""
    raw = ((node.get("metadata") or {}).get("annotations") or {}).get(RECORD_ANNOTATION)
    if not raw:
        return None, ""
    record = record_of(node)
    if record is None:
        return None, "annotation %s is not a JSON object: ignored" % RECORD_ANNOTATION
    if not key:
        return None, "annotation %s ignored: no remediation key yet (Secret %s/%s), so no record is gpufleet's" % (
            RECORD_ANNOTATION, RECORD_KEY_NAMESPACE, RECORD_KEY_SECRET)
    mac = record.get(MAC_KEY)
    if not isinstance(mac, str) or not hmac.compare_digest(mac, record_mac(record, node, key)):
        return None, ("annotation %s ignored: its MAC is not gpufleet's for this Node (written by someone else, "
                      "copied from another Node, or from a Node of the same name before it was recreated)"
                      % RECORD_ANNOTATION)
    return record, ""


def cordon_owner(node):
    """Who set ``spec.unschedulable`` by the Node's managedFields (the last writer owns it), or None when
    the Node carries no managedFields entry for it."""
    owners = [m.get("manager") for m in (node.get("metadata") or {}).get("managedFields") or []
              if "f:unschedulable" in ((m.get("fieldsV1") or {}).get("f:spec") or {})]
    if not owners:
        return None
    return FIELD_MANAGER if FIELD_MANAGER in owners else owners[-1]


def gpufleet_cordoned(node, record):
    """True when the cordon on ``node`` is gpufleet's: its (trusted) record says gpufleet cordoned it, and
    no one else has written ``spec.unschedulable`` since (managedFields)."""
    if not (record or {}).get("cordoned") or not (node.get("spec") or {}).get("unschedulable"):
        return False
    who = cordon_owner(node)
    return who is None or who == FIELD_MANAGER
