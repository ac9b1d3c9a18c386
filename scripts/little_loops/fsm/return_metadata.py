"""Temporary alias: this module moved to `little_loops.fsm.judging.return_metadata`."""

import importlib
import sys

sys.modules[__name__] = importlib.import_module("little_loops.fsm.judging.return_metadata")
