"""The ansible-test sanity ignore file holds only the accepted ignore: validate-modules'
missing-gplv3-license (the collection is Apache-2.0), one line per plugin that validate-modules reads,
and none for a file that does not exist."""
import glob
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTION = os.path.join(ROOT, "collections", "ansible_collections", "gpufleet", "k8s")


def entries():
    out = []
    for path in glob.glob(os.path.join(COLLECTION, "tests", "sanity", "ignore-*.txt")):
        with open(path) as f:
            out += [(os.path.basename(path), line.split("#")[0].split()) for line in f if line.strip()]
    return out


def test_only_the_license_ignore_is_used():
    found = entries()
    assert found
    assert [(name, e) for name, e in found if len(e) != 2 or e[1] != "validate-modules:missing-gplv3-license"] == []


def test_every_validated_plugin_is_listed_and_every_listed_file_exists():
    listed = {e[0] for _, e in entries()}
    plugins = {os.path.relpath(p, COLLECTION) for kind in ("modules", "lookup", "callback")
               for p in glob.glob(os.path.join(COLLECTION, "plugins", kind, "*.py")) if not p.endswith("__init__.py")}
    assert sorted(plugins - listed) == [], "add them to tests/sanity/ignore-*.txt (license line only)"
    assert sorted(listed - plugins) == []


def test_changelog_fragments_use_known_sections_and_plain_text_items():
    """What ansible-test's changelog check refuses, found in a second instead of at the sanity step."""
    import yaml
    with open(os.path.join(COLLECTION, "changelogs", "config.yaml")) as f:
        sections = {s[0] for s in yaml.safe_load(f)["sections"]} | {"release_summary", "trivial"}
    bad = []
    for path in sorted(glob.glob(os.path.join(COLLECTION, "changelogs", "fragments", "*.yml"))):
        with open(path) as f:
            data = yaml.safe_load(f)
        for section, items in (data or {}).items():
            if section not in sections:
                bad.append((os.path.basename(path), section, "unknown section"))
            for item in items if isinstance(items, list) else [items]:
                if not isinstance(item, str):
                    bad.append((os.path.basename(path), section, "item is not text (quote it): %r" % (item,)))
    assert bad == []
