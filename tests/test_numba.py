"""mlnb._kernels.jit: every compiled kernel of the package is cached under one stamp of all the files with
compiled code, so that an edit of any of them (a row step that another file's kernel inlines) recompiles
the kernels that compiled it in, instead of loading the old machine code."""

import ast
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from mlnb._kernels import jit as _numba

pytestmark = pytest.mark.skipif(not _numba.HAVE_NUMBA, reason="numba is not installed")

PROJECT = Path(__file__).resolve().parents[1]
#: decorators that make a function compiled code (numba's)
COMPILING = {"njit", "jit", "intrinsic", "overload", "vectorize", "guvectorize"}


def stamp(root: Path) -> bytes:
    return _numba.kernels_stamp.__wrapped__(root)


def test_the_stamp_changes_with_the_files_holding_compiled_code_and_only_with_them(tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "kernels.py").write_text("from .step import row\n@njit\ndef step(w):\n    return row(w)\n")
    (tmp_path / "step.py").write_text("@njit(cache=True)\ndef row(w):\n    return w * 0.5\n")
    (tmp_path / "report.py").write_text("TITLE = 'a'\n")
    (tmp_path / "notes.txt").write_text("njit a\n")
    before = stamp(tmp_path)
    (tmp_path / "report.py").write_text("TITLE = 'b'\n")
    (tmp_path / "notes.txt").write_text("njit b\n")
    assert stamp(tmp_path) == before  # no compiled code there, or not a source file
    (tmp_path / "step.py").write_text("@njit(cache=True)\ndef row(w):\n    return w * 0.25\n")
    assert stamp(tmp_path) != before  # the file the kernel calls into, not the kernel's own
    (tmp_path / "step.py").write_text("@njit(cache=True)\ndef row(w):\n    return w * 0.5\n")
    assert stamp(tmp_path) == before  # the contents, not the times
    (tmp_path / "step.py").rename(tmp_path / "models" / "step.py")
    assert stamp(tmp_path) != before  # the paths too


def _compiled_functions(tree: ast.Module):
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for decorator in node.decorator_list:
                function = decorator.func if isinstance(decorator, ast.Call) else decorator
                if (function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")) in COMPILING:
                    yield node
                    break


@pytest.mark.slow
def test_compiled_code_takes_nothing_from_a_file_outside_the_stamp():
    """The stamp covers the files whose text marks compiled code. What a compiled function (its body and
    its decorators) names from another mlnb module must come from such a file, or a change there would
    not recompile it."""
    package = PROJECT / "mlnb"
    stamped = {path for path in package.rglob("*.py")
               if any(mark in path.read_bytes() for mark in _numba.KERNEL_MARKS)}
    outside = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        compiled = list(_compiled_functions(tree))
        if not compiled:
            continue
        assert path in stamped, f"{path} holds compiled code but no mark of KERNEL_MARKS"
        imported = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("mlnb"):
                for alias in node.names:
                    imported[alias.asname or alias.name] = node.module
        named = {n.id for function in compiled for n in ast.walk(function) if isinstance(n, ast.Name)}
        for name in sorted(named & set(imported)):
            module = PROJECT.joinpath(*imported[name].split("."))
            source = module.with_suffix(".py") if module.with_suffix(".py").exists() else module / "__init__.py"
            if source not in stamped:
                outside.append(f"{path.relative_to(PROJECT)}: {name} from {imported[name]}")
    assert outside == []


def test_a_kernel_of_the_package_is_stamped_with_the_kernels_and_others_with_their_file(tmp_path):
    from numba import njit
    from numba.core.caching import FunctionCache

    from mlnb.models.logistic.kernels import _words_region

    assert FunctionCache(_words_region.py_func)._impl.locator.get_source_stamp() == _numba.kernels_stamp()
    module = tmp_path / "elsewhere.py"
    module.write_text("def twice(x):\n    return 2 * x\n")
    sys.path.insert(0, str(tmp_path))
    try:
        import elsewhere
        outside = FunctionCache(njit(cache=True)(elsewhere.twice).py_func)._impl.locator.get_source_stamp()
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("elsewhere", None)
    assert outside != _numba.kernels_stamp()


@pytest.mark.slow
def test_the_index_numba_writes_for_a_kernel_holds_the_kernels_stamp(tmp_path):
    """In a fresh process with its own cache folder: the index file of a compiled kernel records the
    kernels' stamp, so the next process loads it only while no file with compiled code has changed."""
    environment = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    code = ("import numpy as np\nfrom mlnb.models import _float32_math as fm\n"
            "x = np.zeros(3, np.float32)\nfm.elementwise(fm.exp_nonpositive, x, x)\n")
    subprocess.run([sys.executable, "-c", code], cwd=PROJECT, env=environment, check=True, timeout=300)
    indexes = list(tmp_path.rglob("_float32_math.elementwise*.nbi"))
    assert indexes, sorted(p.name for p in tmp_path.rglob("*"))
    with open(indexes[0], "rb") as index:
        pickle.load(index)  # numba's version
        stamp_recorded, _ = pickle.loads(index.read())
    assert stamp_recorded == _numba.kernels_stamp()



def _package_kernels() -> list:
    """Every numba dispatcher of the package (all its modules imported), kernels made inside functions
    included (found among the live objects)."""
    import gc
    import importlib
    import pkgutil

    from numba.core.registry import CPUDispatcher

    import mlnb

    for module in pkgutil.walk_packages(mlnb.__path__, "mlnb."):
        importlib.import_module(module.name)
    return [thing for thing in gc.get_objects() if isinstance(thing, CPUDispatcher)
            and getattr(thing.py_func, "__module__", "").startswith("mlnb")]


def test_no_two_cached_kernels_share_an_entry_of_numbas_cache():
    """numba's on-disk cache names a kernel by its function's qualified name and first line and keys it
    on the argument types, not on the compile flags: one function compiled twice (parallel and serial)
    shared one entry, and whichever compiled first in a fresh cache was loaded for both (scoring ran on
    one thread at every thread count). Every cached kernel of the package is its own function."""
    from numba.core.caching import NullCache

    kernels = {}
    for kernel in _package_kernels():
        if isinstance(kernel._cache, NullCache):
            continue
        function = kernel.py_func
        key = (function.__module__, function.__qualname__, function.__code__.co_firstlineno)
        kernels.setdefault(key, []).append(kernel)
    assert len(kernels) > 50, sorted(kernels)
    assert [key for key, same in kernels.items() if len(same) > 1] == []


@pytest.mark.slow
def test_the_parallel_scoring_loop_is_not_loaded_from_the_serial_loops_cache_entry(tmp_path):
    """A fresh cache where the serial scoring loop compiled first: the next process compiles the
    parallel loop (a cache miss), where it used to load the serial machine code as the parallel kernel."""
    environment = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    setup = ("import numpy as np, scipy.sparse as sp\nfrom mlnb.models import _scoring as s\n"
             "X = sp.random(4, 6, density=0.5, format='csr', dtype=np.float32, random_state=0)\n"
             "W = np.ones((6, 2), np.float32); b = np.zeros(2, np.float32); out = np.empty((4, 2), np.float32)\n"
             "arguments = (X.indptr, X.indices, X.data, W, b, False, False, out)\n")
    subprocess.run([sys.executable, "-c", setup + "s._csr_times_dense_serial(*arguments)\n"], cwd=PROJECT,
                   env=environment, check=True, timeout=300)
    parallel = setup + ("s._csr_times_dense(*arguments, 2, 256)\n"
                        "print(sum(s._csr_times_dense.stats.cache_hits.values()), "
                        "sum(s._csr_times_dense.stats.cache_misses.values()))\n")
    done = subprocess.run([sys.executable, "-c", parallel], cwd=PROJECT, env=environment, check=True,
                          timeout=300, capture_output=True, text=True)
    assert done.stdout.split() == ["0", "1"]
