"""The README stays a short front page (the two commands exactly, no timings, <= 200 lines), every
relative link in README.md, docs/ and bench/RESULTS.md resolves (file and #anchor), every topic
page under docs/ is reachable from the README, and nothing reads README.md at run time."""
import glob
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COMMAND_1 = "scripts/bootstrap.sh && .venv/bin/ansible-playbook site.yml"
COMMAND_2 = "scripts/test.sh"
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _read(rel):
    with open(os.path.join(ROOT, rel)) as handle:
        return handle.read()


def _markdown_files():
    files = ["README.md", "bench/RESULTS.md"]
    files += sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "**", "*.md"),
                                                                recursive=True))
    return files


def slug(heading):
    """GitHub's anchor of a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(text):
    out = set()
    in_code = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and re.match(r"#+ ", line):
            out.add(slug(line.lstrip("#")))
    return out


def test_readme_is_a_short_front_page_with_the_two_commands():
    readme = _read("README.md")
    assert len(readme.splitlines()) <= 200
    lines = [line.strip() for line in readme.splitlines()]
    assert COMMAND_1 in lines and COMMAND_2 in lines
    # CI runs command 2 as it stands in the README
    assert re.search(r"^exec bash %s$" % re.escape(COMMAND_2), _read(".ci/run"), re.M)
    # no measured figures on the front page: they live in bench/RESULTS.md and docs/development/testing.md
    timings = re.findall(r"\b\d+(?:\.\d+)?\s?(?:s|ms|min|minutes|seconds)\b|\b\d+m\d+s\b", readme)
    assert not timings, timings


@pytest.mark.parametrize("rel", _markdown_files())
def test_relative_links_resolve(rel):
    text = re.sub(r"```.*?```", "", _read(rel), flags=re.S)
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _sep, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(os.path.join(ROOT, rel)), path)) if path \
            else os.path.join(ROOT, rel)
        if not os.path.exists(dest):
            broken.append(target)
        elif anchor and dest.endswith(".md") and anchor not in anchors(open(dest).read()):
            broken.append(target + " (no such heading)")
    assert not broken, "%s: %s" % (rel, broken)


def test_every_topic_page_is_linked_from_the_readme():
    readme = _read("README.md")
    linked = {os.path.normpath(t.partition("#")[0]) for t in LINK.findall(readme)}
    pages = [os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True)
             if os.sep + "reference" + os.sep not in p]
    missing = [p for p in pages if p not in linked]
    assert not missing, "docs pages the README does not link: %s" % missing


def test_nothing_reads_the_readme_at_run_time():
    sources = glob.glob(os.path.join(ROOT, "collections", "ansible_collections", "gpufleet", "k8s", "plugins",
                                     "**", "*.py"), recursive=True)
    sources += glob.glob(os.path.join(ROOT, "roles", "*", "tasks", "*.yml"))
    sources += glob.glob(os.path.join(ROOT, "playbooks", "*.yml")) + glob.glob(os.path.join(ROOT, "awx", "*.yml"))
    readers = [os.path.relpath(p, ROOT) for p in sources
               if "_vendor" not in p and re.search(r"['\"]README\.md['\"]|README\.md['\"]", open(p).read())]
    assert not readers, readers


def test_docs_agree_with_the_pins_on_digests_and_checksums():
    """Issue 39: docs/security.md said NFD v0.19.0 had no digest while versions.py pins one, and docs/awx.md
    said helm was checked against the download host's checksum file while execution-environment.yml checks
    a SHA-256 written in the file."""
    from ansible_collections.gpufleet.k8s.plugins.module_utils.core.versions import IMAGES
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    docs = {}
    for folder, _dirs, files in os.walk(os.path.join(root, "docs")):
        for name in files:
            if name.endswith(".md"):
                with open(os.path.join(folder, name)) as handle:
                    docs[os.path.relpath(os.path.join(folder, name), root)] = re.sub(r"\s+", " ", handle.read())
    digested = [img for img in IMAGES.values() if img.get("digest")]
    assert digested
    for path, text in docs.items():
        for key, img in IMAGES.items():
            if not img.get("digest"):
                continue
            for short in (img["repository"].rsplit("/", 1)[-1], key.replace("_", " "), key.replace("_", "-")):
                assert not re.search(r"\b%s.{0,40}? has no digest" % re.escape(short), text, re.I), (path, short)
        assert "checksum file)" not in text.replace("never a checksum file)", ""), path
    with open(os.path.join(root, "execution-environment.yml")) as handle:
        assert "HELM_SHA256" in handle.read()
