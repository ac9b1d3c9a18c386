"""Temporary alias: this module moved to `little_loops.fsm.process.process_groups`."""

import importlib
import sys

sys.modules[__name__] = importlib.import_module("little_loops.fsm.process.process_groups")
