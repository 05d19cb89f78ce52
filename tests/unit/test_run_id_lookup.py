"""lookup gpufleet.k8s.run_id (issue 39, item 2): the same text in the ansible-playbook process and in every worker it
creates (Ansible's workers are multiprocessing processes), another text in another run. The gpufleet role records it
beside the plan it publishes; a plan from group_vars or -e cannot carry it."""
import multiprocessing
import os
import subprocess
import sys

from ansible_collections.gpufleet.k8s.plugins.lookup.run_id import LookupModule, run_id


def _child(queue):
    queue.put(run_id())


def test_a_worker_gets_the_controller_s_id():
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    worker = ctx.Process(target=_child, args=(queue,))
    worker.start()
    worker.join(30)
    assert queue.get(timeout=5) == run_id() == LookupModule().run([])[0]


def test_another_run_gets_another_id():
    code = ("import sys; sys.path[:0] = %r; from ansible_collections.gpufleet.k8s.plugins.lookup.run_id import "
            "run_id; print(run_id())" % (sys.path,))
    other = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.strip()
    assert len(other) == 32 and other != run_id()
    assert run_id(os.getpid()) == run_id()
