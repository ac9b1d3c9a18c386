"""little-loops: FSM automation loops for AI-assisted development."""

from __future__ import annotations

__version__ = "0.1.0"
