"""The examples in the public modules' docstrings run and print what they say.

Every public module of the package (no part of its name starting with ``_``) whose source holds a
``>>>`` example is found here and run with ``doctest``: an example added to any docstring is tested
from then on, with nothing to register.
"""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "mlnb"


def _modules_with_examples() -> list[str]:
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if any(part.startswith("_") for part in parts[1:] if part != "__init__"):
            continue
        if any(line.lstrip().startswith(">>> ") for line in path.read_text(encoding="utf-8").splitlines()):
            names.append(".".join(part for part in parts if part != "__init__"))
    return names


MODULES = _modules_with_examples()


def test_the_documented_modules_are_found():
    # the modules whose examples this file was written with (more may join)
    assert {"mlnb.decision", "mlnb.calibration", "mlnb.data.dataset", "mlnb.models.prior"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{name}: no example was run"
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed (see the output above)"
