# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""EKS inputs that end up in an EC2NodeClass as given: the node role (spec.role) and the ``tags`` of
selector terms (amiSelectorTerms, subnetSelectorTerms, securityGroupSelectorTerms).

Facts: spec.role takes an IAM role's name, not its ARN; IAM role names are 1-64 characters of
letters, digits and ``+=,.@_-``. A selector term's ``tags`` is a map of tag key to value (``*``
matches any value), at most 20 entries, keys and values non-empty strings (the EC2NodeClass CRD's
schema and validation rules). Used by ``pools_check`` in preflight.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

IAM_ROLE_NAME = re.compile(r"^[A-Za-z0-9_+=,.@-]{1,64}$")
SELECTOR_TAGS_MAX = 20


def check_selector_tags(var, tags, problems):
    """``tags`` of a selector term: Karpenter's map of tag key to value ('*' matches any value)."""
    use = "use a mapping of tag key to value, e.g. {karpenter.sh/discovery: my-cluster} ('*' matches any value)"
    if not isinstance(tags, dict) or not tags:
        problems.error(var, "%r is not allowed; %s" % (tags, use))
        return
    if len(tags) > SELECTOR_TAGS_MAX:
        problems.error(var, "has %d tags; use at most %d (Karpenter's limit)" % (len(tags), SELECTOR_TAGS_MAX))
    for key in sorted(tags, key=str):
        value = tags[key]
        if not isinstance(key, str) or not key.strip() or not isinstance(value, str) or not value.strip():
            problems.error("%s[%r]" % (var, key), "%r: %r is not allowed: keys and values must be non-empty strings "
                           "(quote numbers and booleans); %s" % (key, value, use))


def check_node_role(role, problems):
    """gpu_pools_eks_node_role: the IAM role's name (EC2NodeClass spec.role), not its ARN."""
    if role in ("", None):
        return
    var = "gpu_pools_eks_node_role"
    if not isinstance(role, str):
        problems.error(var, "%r is not an IAM role name; use 1-64 letters, digits and +=,.@_- (e.g. "
                       "KarpenterNodeRole-my-cluster), or \"\" for KarpenterNodeRole-<cluster name>" % (role,))
    elif role.startswith("arn:"):
        name = role.rsplit("/", 1)[-1] if ":role/" in role else ""
        problems.error(var, "%r is an ARN; EC2NodeClass spec.role takes the role's name; use %s" % (
            role, "%s (the name in that ARN)" % name if IAM_ROLE_NAME.match(name)
            else "the role name (1-64 letters, digits and +=,.@_-)"))
    elif not IAM_ROLE_NAME.match(role):
        problems.error(var, "%r is not an IAM role name; use 1-64 letters, digits and +=,.@_- (no spaces or "
                       "'/'; e.g. KarpenterNodeRole-my-cluster)" % (role,))
