"""awx/configure.yml against no AWX: check mode stops on the connection check with a clear
message (no traceback) before any awx.awx task runs. No AWX can run on this machine."""
from ansible_run import run_playbook



def test_check_mode_without_awx_fails_clearly():
    rc, out = run_playbook("awx/configure.yml", "--check", timeout=300, collapse=True,
                           CONTROLLER_HOST="http://127.0.0.1:9")
    assert rc != 0
    assert "AWX / Automation Controller at http://127.0.0.1:9 is not reachable" in out, out[-2000:]
    assert "Connection refused" in out and "Nothing was changed" in out
    assert "Traceback" not in out
    assert "Create the organization" not in out
