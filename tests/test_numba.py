"""mlnb._numba: every compiled kernel of the package is cached under one stamp of the whole package, so
that an edit of any file (a row step that another file's kernel inlines) recompiles the kernels that
compiled it in, instead of loading the old machine code."""

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from mlnb import _numba

pytestmark = pytest.mark.skipif(not _numba.HAVE_NUMBA, reason="numba is not installed")

PROJECT = Path(__file__).resolve().parents[1]


def test_the_package_stamp_changes_with_any_python_file_and_only_with_them(tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "kernels.py").write_text("from .step import LIMIT\n")
    (tmp_path / "step.py").write_text("LIMIT = 1e-2\n")
    (tmp_path / "notes.txt").write_text("a\n")
    before = _numba.package_stamp.__wrapped__(tmp_path)
    (tmp_path / "notes.txt").write_text("b\n")
    assert _numba.package_stamp.__wrapped__(tmp_path) == before  # not a source file
    (tmp_path / "step.py").write_text("LIMIT = 1e-3\n")  # the file the kernel imports from, not the kernel's
    assert _numba.package_stamp.__wrapped__(tmp_path) != before
    (tmp_path / "step.py").write_text("LIMIT = 1e-2\n")
    assert _numba.package_stamp.__wrapped__(tmp_path) == before  # the contents, not the times
    (tmp_path / "step.py").rename(tmp_path / "models" / "step.py")
    assert _numba.package_stamp.__wrapped__(tmp_path) != before  # the paths too


def test_a_kernel_of_the_package_is_stamped_with_the_package_and_others_with_their_file(tmp_path):
    from numba import njit
    from numba.core.caching import FunctionCache

    from mlnb.models._glm_kernels import _words_region

    assert FunctionCache(_words_region.py_func)._impl.locator.get_source_stamp() == _numba.package_stamp()
    module = tmp_path / "elsewhere.py"
    module.write_text("def twice(x):\n    return 2 * x\n")
    sys.path.insert(0, str(tmp_path))
    try:
        import elsewhere
        outside = FunctionCache(njit(cache=True)(elsewhere.twice).py_func)._impl.locator.get_source_stamp()
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("elsewhere", None)
    assert outside != _numba.package_stamp()


def test_the_index_numba_writes_for_a_kernel_holds_the_package_stamp(tmp_path):
    """In a fresh process with its own cache folder: the index file of a compiled kernel records the
    package's stamp, so the next process loads it only while no file of the package has changed."""
    environment = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    code = ("import numpy as np\nfrom mlnb.models import _float32_math as fm\n"
            "x = np.zeros(3, np.float32)\nfm.elementwise(fm.exp_nonpositive, x, x)\n")
    subprocess.run([sys.executable, "-c", code], cwd=PROJECT, env=environment, check=True, timeout=300)
    indexes = list(tmp_path.rglob("_float32_math.elementwise*.nbi"))
    assert indexes, sorted(p.name for p in tmp_path.rglob("*"))
    with open(indexes[0], "rb") as index:
        pickle.load(index)  # numba's version
        stamp, _ = pickle.loads(index.read())
    assert stamp == _numba.package_stamp()
