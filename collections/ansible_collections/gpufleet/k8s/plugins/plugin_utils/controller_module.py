# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Run a gpufleet module inside the controller's worker process when its task targets the controller.

Ansible runs a module by building a zip payload of the module and every module_utils file it imports,
starting a new Python interpreter and importing all of it again: about half a second per task on a
2-core machine, whatever the module does. gpufleet's render mode is a few dozen such tasks on
``localhost``, so most of a render was this start-up cost.

A module whose logic takes a module-like object (``run(module)``) gets an action plugin built on
:class:`ControllerAction`. When the task's connection is ``local`` (the controller itself, including
``delegate_to: localhost``), without ``become`` or ``async``, the action validates the arguments
against the module's own ``argspec()`` with Ansible's :class:`ArgumentSpecValidator` (the validator
``AnsibleModule`` uses), applies the task's ``environment`` to the worker process, and calls
``run()`` with a :class:`ControllerModule`. Any other target runs the module the usual way.

The worker is a process forked for this one task, so the environment and anything the module does to
the process end with the task.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import os

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.common.parameters import remove_values
from ansible.module_utils.six import binary_type, text_type
from ansible.plugins.action import ActionBase

from ansible.module_utils.six.moves.collections_abc import Mapping, Set


class ModuleExit(Exception):
    """Raised by :meth:`ControllerModule.exit_json` / ``fail_json`` to end ``run()`` with a result."""

    def __init__(self, result):
        super(ModuleExit, self).__init__(result.get("msg", ""))
        self.result = result


def plain(value):
    """``value`` as the plain JSON types a module receives (Ansible's tagged strings and other
    subclasses become ``str``/``int``/..., tuples and sets become lists, dates ISO strings): a module
    run in-process sees exactly what it would see after the JSON hop to a separate interpreter."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, text_type):
        # an exact str: ansible-core 2.18's AnsibleUnsafeText returns itself from str()
        return text_type.__str__(value)
    if isinstance(value, binary_type):
        return value.decode("utf-8", "surrogateescape")
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, Mapping):
        return dict((plain(k) if isinstance(k, text_type) else text_type(k), plain(v)) for k, v in value.items())
    if isinstance(value, (list, tuple, Set)):
        return [plain(v) for v in value]
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    raise TypeError("a module argument of type %s cannot be passed to a module" % type(value).__name__)


class ControllerModule(object):
    """The part of ``AnsibleModule`` gpufleet's modules use (``params``, ``check_mode``, ``_diff``,
    ``warn``, ``exit_json``, ``fail_json``), for a module run inside the controller's worker.

    As ``AnsibleModule`` does, every value of a ``no_log`` option (a bearer token, a password) is masked
    wherever it appears in the result, messages included: a client error that quotes it never reaches
    the log."""

    def __init__(self, argument_spec, args, check_mode=False, diff=False, name="module"):
        self.check_mode = bool(check_mode)
        self._diff = bool(diff)
        self._warnings = []
        validated = ArgumentSpecValidator(argument_spec).validate(plain(args))
        self.no_log_values = set(validated._no_log_values)  # pylint: disable=protected-access
        if validated.error_messages:
            raise ModuleExit(self.masked(dict(failed=True, msg="%s: %s" % (name, "; ".join(validated.error_messages)))))
        self.params = validated.validated_parameters

    def masked(self, result):
        return remove_values(result, self.no_log_values) if self.no_log_values else result

    def warn(self, warning):
        self._warnings.append(text_type(warning))

    def _result(self, kwargs):
        result = dict(kwargs)
        result.setdefault("changed", False)
        if self._warnings:
            result["warnings"] = list(self._warnings)
        return self.masked(result)

    def exit_json(self, **kwargs):
        raise ModuleExit(self._result(kwargs))

    def fail_json(self, msg, **kwargs):
        kwargs.update(failed=True, msg=msg)
        raise ModuleExit(self._result(kwargs))


def run_in_process(module_file, args, check_mode=False, diff=False, name="module"):
    """Run ``module_file.run(module)`` with a :class:`ControllerModule`; return its result dict. An
    exception the module did not turn into ``fail_json`` becomes a failed result with the no_log values
    masked (left to Ansible, its text and traceback would be printed as they are)."""
    module = None
    try:
        module = ControllerModule(module_file.argspec(), args, check_mode, diff, name)
        module_file.run(module)
    except ModuleExit as exc:
        return exc.result
    except Exception as exc:  # pylint: disable=broad-except
        result = dict(failed=True, msg="%s failed unexpectedly: %s: %s" % (name, type(exc).__name__, exc))
        return module.masked(result) if module is not None else dict(
            failed=True, msg="%s failed unexpectedly: %s" % (name, type(exc).__name__))
    return dict(failed=True, msg="%s ended without a result" % name)


class ControllerAction(ActionBase):
    """Action plugin base: run ``MODULE`` (the imported module file) in-process on the controller,
    else as a module. Subclasses set ``MODULE`` and ``NAME`` (the module's FQCN)."""

    MODULE = None
    NAME = None
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = True

    def _in_controller(self):
        return (getattr(self._connection, "transport", None) == "local"
                and not self._play_context.become
                and not self._task.async_val)

    def run(self, tmp=None, task_vars=None):
        result = super(ControllerAction, self).run(tmp, task_vars)
        if not self._in_controller():
            result.update(self._execute_module(module_name=self.NAME, module_args=self._task.args,
                                               task_vars=task_vars, wrap_async=self._task.async_val))
            return result
        environment = {}
        self._compute_environment_string(raw_environment_out=environment)
        for key, value in environment.items():
            os.environ[text_type(key)] = text_type(value)
        result.update(run_in_process(self.MODULE, self._task.args, check_mode=self._task.check_mode,
                                     diff=self._task.diff, name=self.NAME))
        return result
