from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor.tomlkit.api import TOMLDocument
from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor.tomlkit.api import aot
from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor.tomlkit.api import array
from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor.tomlkit.api import boolean
from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor.tomlkit.api import comment
from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor.tomlkit.api import date
from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor.tomlkit.api import datetime
from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor.tomlkit.api import document
from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor.tomlkit.api import dump
from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor.tomlkit.api import dumps
from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor.tomlkit.api import float_
from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor.tomlkit.api import inline_table
from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor.tomlkit.api import integer
from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor.tomlkit.api import item
from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor.tomlkit.api import key
from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor.tomlkit.api import key_value
from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor.tomlkit.api import load
from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor.tomlkit.api import loads
from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor.tomlkit.api import nl
from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor.tomlkit.api import parse
from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor.tomlkit.api import register_encoder
from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor.tomlkit.api import string
from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor.tomlkit.api import table
from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor.tomlkit.api import time
from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor.tomlkit.api import unregister_encoder
from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor.tomlkit.api import value
from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor.tomlkit.api import ws


__version__ = "0.15.2"
__all__ = [
    "TOMLDocument",
    "aot",
    "array",
    "boolean",
    "comment",
    "date",
    "datetime",
    "document",
    "dump",
    "dumps",
    "float_",
    "inline_table",
    "integer",
    "item",
    "key",
    "key_value",
    "load",
    "loads",
    "nl",
    "parse",
    "register_encoder",
    "string",
    "table",
    "time",
    "unregister_encoder",
    "value",
    "ws",
]
