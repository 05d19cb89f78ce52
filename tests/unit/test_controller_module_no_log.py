"""A gpufleet module run in the controller's worker (plugin_utils/controller_module.py) masks its no_log
option values like AnsibleModule does (issue 30, item 3): a bearer token quoted by a client error, in a
fail_json message or in an exception the module did not catch, never reaches the task result."""
import types

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.kube.cluster_access import connection_args
from ansible_collections.gpufleet.k8s.plugins.plugin_utils import controller_module

TOKEN = "sentinel-token-5f2c9a"


def fake_module(body):
    spec = dict(name=dict(type="str", default="n"))
    spec.update(connection_args(None))
    return types.SimpleNamespace(argspec=lambda: spec, run=body)


def fail_quoting(module):
    module.fail_json(msg="the API server said: Authorization: Bearer %s was refused" % module.params["api_key"],
                     detail={"header": "Bearer " + module.params["api_key"]})


def exit_quoting(module):
    module.exit_json(changed=False, seen=[module.params["api_key"]])


def crash_quoting(module):
    raise RuntimeError("connection to %s with token %s lost" % (module.params["host"], module.params["api_key"]))


@pytest.mark.parametrize("body,failed", [(fail_quoting, True), (exit_quoting, False), (crash_quoting, True)])
def test_no_log_values_are_masked_in_every_result(body, failed):
    result = controller_module.run_in_process(fake_module(body), {"host": "https://10.0.0.1:6443", "api_key": TOKEN},
                                              name="gpufleet.k8s.fake")
    assert bool(result.get("failed")) is failed
    assert TOKEN not in repr(result)
    if body is crash_quoting:
        # the message still says what happened, with the host and the exception type
        assert result["msg"].startswith("gpufleet.k8s.fake failed unexpectedly: RuntimeError: connection to "
                                        "https://10.0.0.1:6443 with token ******** lost")
    if body is fail_quoting:
        assert "Bearer ********" in result["msg"]


def test_a_bad_argument_message_does_not_quote_the_token():
    result = controller_module.run_in_process(fake_module(exit_quoting), {"api_key": TOKEN, "bogus": TOKEN},
                                              name="gpufleet.k8s.fake")
    assert result["failed"] and "bogus" in result["msg"]
    assert TOKEN not in repr(result)


def test_without_no_log_values_the_result_is_unchanged():
    result = controller_module.run_in_process(fake_module(crash_quoting), {"host": "https://h"}, name="m")
    assert result == {"failed": True, "msg": "m failed unexpectedly: RuntimeError: connection to https://h with "
                                             "token None lost"}
