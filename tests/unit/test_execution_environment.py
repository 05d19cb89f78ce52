"""The AWX execution environment definition is valid for ansible-builder and does not drift
from the project's real Python and collection dependencies."""
import json
import os
import re
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EE = os.path.join(ROOT, "execution-environment.yml")
FQCN_TASK = re.compile(r"^\s*-?\s*([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*):", re.M)
FQCN_FILTER = re.compile(r"\|\s*([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)")
FQCN_LOOKUP = re.compile(r"(?:query|lookup)\('([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)\.[a-z_]+'")
OWN = {"ansible.builtin", "gpufleet.k8s"}


def runtime_requirements():
    """Names from requirements.txt above the '# tests' line (the ones a job run needs)."""
    names = []
    with open(os.path.join(ROOT, "requirements.txt")) as handle:
        for line in handle:
            if line.strip() == "# tests":
                break
            line = line.split("#")[0].strip()
            if line:
                names.append(re.split(r"[<>=!\[ ]", line)[0].lower())
    return names


def constraints():
    pins = {}
    with open(os.path.join(ROOT, "constraints.txt")) as handle:
        for line in handle:
            if "==" in line and not line.startswith("#"):
                name, version = line.strip().split("==")
                pins[name.lower().replace("_", "-")] = version
    return pins


def load_ee():
    with open(EE) as handle:
        return yaml.safe_load(handle)


def test_ansible_builder_accepts_the_definition(tmp_path):
    builder = os.path.join(os.path.dirname(sys.executable), "ansible-builder")
    proc = subprocess.run([builder, "create", "-f", EE, "-c", str(tmp_path / "ctx"), "--output-filename", "Containerfile"],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    containerfile = (tmp_path / "ctx" / "Containerfile").read_text()
    assert "ubi9/ubi:9.6" in containerfile
    assert (tmp_path / "ctx" / "_build" / "requirements.yml").is_file()
    assert (tmp_path / "ctx" / "_build" / "gpufleet" / "k8s" / "galaxy.yml").is_file()


def test_python_dependencies_match_requirements_and_constraints():
    ee = load_ee()["dependencies"]
    pins = constraints()
    ee_python = dict(item.lower().split("==") for item in ee["python"])
    ee_python["ansible-core"] = ee["ansible_core"]["package_pip"].split("==")[1]
    for name in runtime_requirements():
        if name == "ansible":
            continue  # the bundle: the EE installs the collections it needs from collections/requirements.yml
        assert name in ee_python, "%s is a runtime requirement but missing from execution-environment.yml" % name
        assert ee_python[name] == pins[name], "%s: EE pins %s, constraints.txt %s" % (name, ee_python[name], pins[name])


def used_collections():
    used = set()
    for top in ("site.yml", "playbooks", "roles", "awx"):
        path = os.path.join(ROOT, top)
        files = [path] if os.path.isfile(path) else [os.path.join(d, f) for d, _s, fs in os.walk(path) for f in fs
                                                      if f.endswith((".yml", ".yaml", ".j2"))]
        for name in files:
            text = open(name).read()
            for regex in (FQCN_TASK, FQCN_FILTER, FQCN_LOOKUP):
                for match in regex.finditer(text):
                    used.add("%s.%s" % (match.group(1), match.group(2)))
    return used - OWN


def test_every_collection_used_is_required():
    with open(os.path.join(ROOT, "collections", "requirements.yml")) as handle:
        required = {c["name"] for c in yaml.safe_load(handle)["collections"]}
    used = used_collections()
    assert "kubernetes.core" in used  # the scan works
    missing = sorted(used - required)
    assert not missing, "collections used but not in collections/requirements.yml: %s" % missing
    assert load_ee()["dependencies"]["galaxy"] == "collections/requirements.yml"


def test_the_clis_the_roles_call_are_in_the_image(tmp_path):
    """helm (kubernetes.core.helm, operator mode), gcloud + gke-gcloud-auth-plugin (GKE apply) and
    the AWS CLI (EKS kubeconfig exec) are installed, pinned, by the generated Containerfile. The
    image cannot be built here (no registry, no internet beyond PyPI/apt/npm)."""
    roles_text = "".join(open(os.path.join(d, f)).read() for d, _s, fs in os.walk(os.path.join(ROOT, "roles"))
                         for f in fs if f.endswith(".yml"))
    assert "kubernetes.core.helm:" in roles_text and "gcloud container clusters update" in roles_text
    builder = os.path.join(os.path.dirname(sys.executable), "ansible-builder")
    proc = subprocess.run([builder, "create", "-f", EE, "-c", str(tmp_path / "ctx"), "--output-filename", "Containerfile"],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    containerfile = (tmp_path / "ctx" / "Containerfile").read_text()
    final = containerfile[containerfile.rindex("FROM "):]
    assert re.search(r"ARG HELM_VERSION=v\d+\.\d+\.\d+", final)
    assert 'echo "${HELM_SHA256}  helm-${HELM_VERSION}-linux-amd64.tar.gz" | sha256sum -c --strict -' in final
    assert "install -m 0755 linux-amd64/helm /usr/local/bin/helm" in final
    assert re.search(r"ARG GCLOUD_VERSION=\d+\.\d+\.\d+", final)
    assert "components install gke-gcloud-auth-plugin" in final
    assert re.search(r"ARG AWSCLI_VERSION=2\.\d+\.\d+", final)
    assert "awscli-exe-linux-x86_64-${AWSCLI_VERSION}.zip" in final and "aws/install --bin-dir /usr/local/bin" in final
    with open(os.path.join(ROOT, "bindep.txt")) as handle:
        assert {"tar", "gzip", "unzip"} <= {line.split()[0] for line in handle if line.strip() and not line.startswith("#")}


def test_every_download_is_checked_against_a_value_pinned_here(tmp_path):
    """Issue 30 item 7: no checksum from the download host itself. helm and gcloud archives by a
    SHA-256 pinned in execution-environment.yml, the AWS CLI by its PGP signature from the key whose
    fingerprint is pinned (AWS's install guide); the base image by digest."""
    ee = load_ee()
    assert re.search(r"^registry\.access\.redhat\.com/ubi9/ubi:9\.6@sha256:[0-9a-f]{64}$", ee["images"]["base_image"]["name"])
    steps = "\n".join(ee["additional_build_steps"]["append_final"])
    args = dict(re.findall(r"^ARG ([A-Z0-9_]+)=(\S+)$", steps, re.M))
    assert re.match(r"^[0-9a-f]{64}$", args["HELM_SHA256"]) and re.match(r"^[0-9a-f]{64}$", args["GCLOUD_SHA256"])
    assert args["AWSCLI_KEY_FINGERPRINT"] == "FB5DB77FD5C118B80511ADA8A6310ACC4672475C"
    assert ".sha256sum" not in steps  # the host's own checksum file is not what is trusted
    runs = [s for s in ee["additional_build_steps"]["append_final"] if s.startswith("RUN ")]
    for run in runs:
        archives = [url.rstrip(";") for url in re.findall(r"curl -fsSL(?:O|o \S+) (https://\S+)", run)]
        for url in archives:
            name = url.rsplit("/", 1)[1]
            if name.endswith(".sig"):
                continue
            local = name.replace("${AWSCLI_VERSION}", "").replace("awscli-exe-linux-x86_64-.zip", "awscliv2.zip")
            checked = (re.search(r'echo "\$\{[A-Z]+_SHA256\}  %s" \| sha256sum -c --strict -' % re.escape(name), run)
                       or ("VALIDSIG ${AWSCLI_KEY_FINGERPRINT}" in run and "--verify awscliv2.zip.sig awscliv2.zip" in run
                           and local == "awscliv2.zip"))
            assert checked, "%s is downloaded without a pinned check" % url
    with open(os.path.join(ROOT, "bindep.txt")) as handle:
        assert "gnupg2" in {line.split()[0] for line in handle if line.strip() and not line.startswith("#")}


def test_collection_ranges_are_bounded_and_the_bundle_is_inside_them():
    """Issue 30 item 7: every collection range has an upper bound, and the collections the pinned
    `ansible` bundle installs here fall inside it."""
    from ansible.module_utils.compat.version import LooseVersion
    import importlib.util
    with open(os.path.join(ROOT, "collections", "requirements.yml")) as handle:
        wanted = yaml.safe_load(handle)["collections"]
    for item in wanted:
        parts = [p.strip() for p in item["version"].split(",")]
        assert any(p.startswith(">=") for p in parts) and any(p.startswith("<") and not p.startswith("<=")
                                                              for p in parts), item
        namespace, name = item["name"].split(".")
        spec = importlib.util.find_spec("ansible_collections.%s.%s" % (namespace, name))
        if spec is None or not spec.submodule_search_locations:
            continue  # not bundled (awx.awx)
        with open(os.path.join(list(spec.submodule_search_locations)[0], "MANIFEST.json")) as handle:
            have = LooseVersion(json.load(handle)["collection_info"]["version"])
        low = LooseVersion([p[2:] for p in parts if p.startswith(">=")][0])
        high = LooseVersion([p[1:] for p in parts if p.startswith("<")][0])
        assert low <= have < high, (item, str(have))


def test_the_awx_project_is_pinned_to_the_release_tag():
    """Issue 30 item 7: the AWX project runs a tag, v<collection version>, not a branch."""
    with open(os.path.join(ROOT, "awx", "defaults.yml")) as handle:
        defaults = yaml.safe_load(handle)
    with open(os.path.join(ROOT, "collections", "ansible_collections", "gpufleet", "k8s", "galaxy.yml")) as handle:
        version = yaml.safe_load(handle)["version"]
    assert defaults["gpufleet_awx_scm_branch"] == "v" + version
