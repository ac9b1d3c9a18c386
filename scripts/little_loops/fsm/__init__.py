"""The FSM loop engine. Re-exports are added when all modules are in place."""

from __future__ import annotations
