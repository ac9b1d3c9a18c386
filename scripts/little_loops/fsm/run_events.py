"""Temporary alias: this module moved to `little_loops.fsm.engine.run_events`."""

import importlib
import sys

sys.modules[__name__] = importlib.import_module("little_loops.fsm.engine.run_events")
