"""Shared test settings.

Hypothesis keeps an example database in the working directory by default; tests must not
write outside their temporary directories, so the database is switched off.
"""

from __future__ import annotations

from hypothesis import settings

settings.register_profile("ll-loop", database=None, deadline=None)
settings.load_profile("ll-loop")
