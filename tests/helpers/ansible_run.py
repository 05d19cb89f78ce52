"""The one Ansible runner of the tests: the environment of a run of this checkout, the real
``ansible-playbook`` / ``ansible`` / ``ansible-inventory`` / ``ansible-doc`` of the venv the tests run
in, a site (or stage) render into a build directory, and the PLAY RECAP read back.

Every test that starts an Ansible command goes through here, so the environment (the checkout's
ansible.cfg, no colour, the venv's bin first on PATH) is written once."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/helpers/ -> the checkout
BIN = os.path.dirname(sys.executable)
ANSIBLE_CFG = os.path.join(ROOT, "ansible.cfg")
# The checkout's roles and collection by environment as well (for playbooks and inventories outside the
# checkout, as molecule sets them): pass as ``**CHECKOUT_PATHS``.
CHECKOUT_PATHS = {"ANSIBLE_ROLES_PATH": os.path.join(ROOT, "roles"),
                  "ANSIBLE_COLLECTIONS_PATH": os.path.join(ROOT, "collections")}


def ansible_env(inherit=True, **extra):
    """The environment of an Ansible run of this checkout: its ansible.cfg, no colour, the venv's bin
    first on PATH. ``inherit=False`` starts from nothing but these (PATH then ends with /usr/bin:/bin).
    ``extra`` adds or overrides variables; a value of None removes one (``KUBECONFIG=None``)."""
    base = dict(os.environ) if inherit else {}
    tail = os.environ.get("PATH", "") if inherit else "/usr/bin:/bin"
    env = dict(base, ANSIBLE_CONFIG=ANSIBLE_CFG, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0",
               PATH=BIN + os.pathsep + tail)
    for key, value in extra.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = str(value)
    return env


def command(tool, *args):
    """The argv of the venv's ``tool`` (ansible-playbook, ansible, ansible-inventory, ansible-doc ...)."""
    return [os.path.join(BIN, tool)] + [str(a) for a in args]


def ansible(tool, *args, cwd=ROOT, env=None, timeout=600, **env_extra):
    """Run the venv's ``tool`` with ``args`` (from ``cwd``, the checkout by default) and return the
    CompletedProcess (text, stdout and stderr captured). The environment is ``env`` when given, else
    ``ansible_env(**env_extra)``."""
    if env is None:
        env = ansible_env(**env_extra)
    elif env_extra:
        raise TypeError("pass either env or environment variables, not both")
    return subprocess.run(command(tool, *args), cwd=str(cwd), env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)


def popen(tool, *args, cwd=ROOT, env=None, stdout=subprocess.PIPE, **kw):
    """``tool`` started in the background (stderr into stdout), for tests that act while it runs;
    ``env`` as in ansible(); the other keywords go to subprocess.Popen."""
    return subprocess.Popen(command(tool, *args), cwd=str(cwd), env=env if env is not None else ansible_env(),
                            stdout=stdout, stderr=subprocess.STDOUT, text=True, **kw)


def flat(text):
    """``text`` with every run of whitespace made one space (Ansible wraps long messages)."""
    return re.sub(r"\s+", " ", text)


def output(proc, collapse=False):
    """(returncode, stdout + stderr) of a finished run; ``collapse`` flattens the whitespace."""
    out = proc.stdout + proc.stderr
    return proc.returncode, flat(out) if collapse else out


def run_playbook(playbook, *args, collapse=False, **kw):
    """(returncode, output) of ``ansible-playbook playbook *args`` (keywords as in ansible())."""
    return output(ansible("ansible-playbook", playbook, *args, **kw), collapse)


def run_site(build_dir, *extra, playbook="site.yml", inventory="inventories/example", **kw):
    """(returncode, output) of ``playbook`` (site.yml or a stage) on ``inventory`` rendering into
    ``build_dir``; ``extra`` are more ansible-playbook arguments."""
    return run_playbook(playbook, "-i", inventory, "-e", "gpufleet_build_dir=%s" % build_dir, *extra, **kw)


def recap(output_text, host="localhost"):
    """``host``'s PLAY RECAP counts {ok, changed, unreachable, failed}; fails the test when missing."""
    match = re.search(r"(?<![\w.-])%s\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)"
                      % re.escape(host), output_text)
    assert match, output_text[-3000:]
    return {k: int(v) for k, v in zip(("ok", "changed", "unreachable", "failed"), match.groups())}


def manifests(build_dir):
    """Every ``*.yaml`` file below ``build_dir``, sorted."""
    out = []
    for dirpath, _dirs, files in os.walk(build_dir):
        for name in sorted(files):
            if name.endswith(".yaml"):
                out.append(os.path.join(dirpath, name))
    return sorted(out)
