"""Temporary alias: this module moved to `little_loops.fsm.engine.routing`."""

import importlib
import sys

sys.modules[__name__] = importlib.import_module("little_loops.fsm.engine.routing")
