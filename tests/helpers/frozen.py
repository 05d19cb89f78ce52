"""The date tests run at: "today" is frozen so that end-of-life checks give the same answer on any
day. Unit tests pass ``TODAY`` as preflight's ``today``; playbook runs add ``TODAY_VARS``."""
TODAY = "2026-12-01"
TODAY_VARS = ["-e", "__gpufleet_today=%s" % TODAY]
