"""ll-loop command line."""

from __future__ import annotations
