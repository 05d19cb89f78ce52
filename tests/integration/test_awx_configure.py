"""awx/configure.yml against no AWX: check mode stops on the connection check with a clear
message (no traceback) before any awx.awx task runs. No AWX can run on this machine."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)


def test_check_mode_without_awx_fails_clearly():
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               CONTROLLER_HOST="http://127.0.0.1:9", PATH=BIN + os.pathsep + os.environ["PATH"])
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "awx/configure.yml", "--check"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    out = re.sub(r"\s+", " ", proc.stdout + proc.stderr)
    assert proc.returncode != 0
    assert "AWX / Automation Controller at http://127.0.0.1:9 is not reachable" in out, out[-2000:]
    assert "Connection refused" in out and "Nothing was changed" in out
    assert "Traceback" not in out
    assert "Create the organization" not in out
