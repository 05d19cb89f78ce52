# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Callback for bench/render_scale.py: wall time of every task and play, written as JSON to
$GPUFLEET_STAGE_TIMES when the run ends."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = r"""
name: stage_times
type: aggregate
short_description: Wall time per play and task, as JSON (gpufleet bench)
description:
  - "Writes the plays with their tasks and wall seconds as JSON to the file named by C(GPUFLEET_STAGE_TIMES)."
requirements:
  - enabled in ANSIBLE_CALLBACKS_ENABLED
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "stage_times"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super(CallbackModule, self).__init__()
        self.plays = []
        self.task = None
        self.mark = None

    def _close_task(self):
        now = time.monotonic()
        if self.task is not None:
            self.task["seconds"] = round(now - self.mark, 3)
        if self.plays:
            self.plays[-1]["seconds"] = round(now - self.plays[-1]["start"], 3)
        self.task = None
        self.mark = now

    def v2_playbook_on_play_start(self, play):
        self._close_task()
        self.plays.append({"name": play.get_name(), "start": time.monotonic(), "seconds": 0.0, "tasks": []})

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._close_task()
        self.task = {"name": task.get_name(), "seconds": 0.0}
        self.plays[-1]["tasks"].append(self.task)

    v2_playbook_on_handler_task_start = v2_playbook_on_task_start

    def v2_playbook_on_stats(self, stats):
        self._close_task()
        path = os.environ.get("GPUFLEET_STAGE_TIMES")
        if path:
            for play in self.plays:
                play.pop("start", None)
            with open(path, "w") as handle:
                json.dump({"plays": self.plays}, handle, indent=1)
