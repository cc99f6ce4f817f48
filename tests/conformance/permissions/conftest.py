"""The prod example synthesized once, for the catalogue check."""

import pytest

from tests.conformance.stack.conftest import Synthesized, synthesize_prod


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    return synthesize_prod(tmp_path_factory.mktemp("cdk.out"))
