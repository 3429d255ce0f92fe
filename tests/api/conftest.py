from __future__ import annotations

from pathlib import Path

import pytest
from api_helpers import ROOT


@pytest.fixture()
def in_root(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run with the repository root as working directory, so that paths print as examples/..."""
    monkeypatch.chdir(ROOT)
    return ROOT
