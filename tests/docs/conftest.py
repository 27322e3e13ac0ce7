"""The documentation site, built once for the tests that read it."""

from __future__ import annotations

import pytest

from ._site import SiteBuild, build_site


@pytest.fixture(scope="session")
def site_build(tmp_path_factory: pytest.TempPathFactory) -> SiteBuild:
    return build_site(tmp_path_factory.mktemp("site"))
