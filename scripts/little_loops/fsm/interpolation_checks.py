"""Temporary alias: moved to `little_loops.fsm.loading.interpolation_checks` (issue 12)."""

import importlib
import sys

sys.modules[__name__] = importlib.import_module("little_loops.fsm.loading.interpolation_checks")
