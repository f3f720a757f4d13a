"""The package's type hints: every public function and method annotated, and
mypy --strict clean over the package and the example (when mypy is installed:
Debian's mypy)."""

from __future__ import annotations

import importlib.util
import inspect
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import SOURCE_DIR

import coload


def public_callables() -> Iterator[tuple[str, object]]:
    for name in coload.__all__:
        value = getattr(coload, name)
        if inspect.isfunction(value):
            yield name, value
        elif inspect.isclass(value) and not issubclass(value, BaseException):
            for member_name, member in vars(value).items():
                if inspect.isfunction(member) and (not member_name.startswith("_") or member_name == "__init__"):
                    yield f"{name}.{member_name}", member
                elif isinstance(member, property) and member.fget is not None:
                    yield f"{name}.{member_name}", member.fget


def test_every_public_function_is_annotated_and_documented() -> None:
    checked = 0
    for name, function in public_callables():
        signature = inspect.signature(function)  # type: ignore[arg-type]
        for parameter in signature.parameters.values():
            if parameter.name != "self":
                assert parameter.annotation is not inspect.Parameter.empty, f"{name}({parameter.name}) has no type"
        assert signature.return_annotation is not inspect.Signature.empty, f"{name} has no return type"
        assert name.endswith("__init__") or inspect.getdoc(function), f"{name} has no docstring"
        checked += 1
    assert checked > 30
    assert (Path(coload.__file__).parent / "py.typed").exists()


def test_mypy_strict() -> None:
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed (Debian: apt install mypy)")
    targets = [str(SOURCE_DIR / "python/coload"), str(SOURCE_DIR / "examples/python")]
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir=/dev/null", *targets],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
