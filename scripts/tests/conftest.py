"""Shared test settings.

Hypothesis keeps an example database and caches in `.hypothesis/` under the working
directory by default; tests must not write outside their temporary directories, so the
database is switched off and the caches go to pytest's base temporary directory. This has
to happen when pytest configures itself: Hypothesis writes its caches while tests are
collected, before any fixture runs.
"""

from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis.configuration import set_hypothesis_home_dir

settings.register_profile("ll-loop", database=None, deadline=None)
settings.load_profile("ll-loop")


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    factory: pytest.TempPathFactory = config._tmp_path_factory  # type: ignore[attr-defined]
    set_hypothesis_home_dir(factory.getbasetemp() / "hypothesis")
