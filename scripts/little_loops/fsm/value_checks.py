"""Temporary alias: the module moved to `little_loops.fsm.loading.value_checks` (issue 12)."""

import importlib
import sys

sys.modules[__name__] = importlib.import_module("little_loops.fsm.loading.value_checks")
