"""Shared fixtures of the Python package's tests (tests/python/CMakeLists.txt
runs them with PYTHONPATH=<build>/python and these variables set)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import coload

SOURCE_DIR = Path(os.environ.get("COLOAD_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BUILD_DIR = Path(os.environ.get("COLOAD_BUILD_DIR", SOURCE_DIR / "build"))
FIXTURE_DIR = Path(os.environ.get("COLOAD_FIXTURE_DIR", BUILD_DIR / "fixtures"))
SAXPY = "_Z5saxpyfPKfPfi"


def fixture(relative: str) -> Path:
    """A toolchain-built fixture (docs/fixtures.md)."""
    path = FIXTURE_DIR / relative
    if not path.exists():
        pytest.fail(f"missing fixture {path}: build the coload_fixtures target")
    return path


def needs(function: str) -> pytest.MarkDecorator:
    """Skips a test when the library lacks `function` (added by a newer coload)."""
    return pytest.mark.skipif(not coload.has_function(function), reason=f"this libcoload.so.0 has no {function}")


@pytest.fixture
def registry() -> Iterator[coload.Registry]:
    """A dry-run registry for gfx90a (device 0) and gfx1100 (device 1), the environment ignored."""
    with coload.Registry(runtime="dry-run", devices=["gfx90a", "gfx1100"], ignore_environment=True) as made:
        yield made
