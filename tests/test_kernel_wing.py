"""The kernel wing: every compiled kernel of mlnb says why it is compiled and names the experiments/ script that
measures it, and numba's intrinsics live in mlnb/_kernels/ only. These checks read the source (AST), so they
hold for kernels no test compiles."""

import ast
import re
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
PACKAGE = PROJECT / "mlnb"
WING = PACKAGE / "_kernels"
SCRIPTS = {path.name for path in (PROJECT / "experiments").glob("*.py")}
#: the sentence that says why a function is compiled, and a script named in the docstring
WHY = "Why a kernel:"
SCRIPT = re.compile(r"experiments/(\w+\.py)")
#: where numba's intrinsics come from
EXTENDING = {"numba.extending", "numba.core.extending"}


def _kernels(tree: ast.Module):
    """Every function whose decorators name a jit (``njit``, ``numba.njit(...)``, ``jit``)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                any("jit" in ast.unparse(decorator) for decorator in node.decorator_list):
            yield node


def undocumented_kernels(source: str, where: str, scripts=frozenset(SCRIPTS)) -> list[str]:
    """The kernels of ``source`` whose docstring lacks the why sentence or names no existing experiments/ script."""
    found = []
    for node in _kernels(ast.parse(source)):
        doc = " ".join((ast.get_docstring(node) or "").split())
        named = SCRIPT.findall(doc)
        if WHY not in doc:
            found.append(f"{where}:{node.lineno} {node.name}: no '{WHY}' sentence")
        if not named:
            found.append(f"{where}:{node.lineno} {node.name}: names no experiments/ script")
        found += [f"{where}:{node.lineno} {node.name}: experiments/{name} does not exist"
                  for name in named if name not in scripts]
    return found


def intrinsic_uses(source: str) -> list[int]:
    """Lines of ``source`` that take numba's ``intrinsic``: imported from numba's extending modules, or named
    as ``….extending.intrinsic``."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module in EXTENDING and \
                any(alias.name == "intrinsic" for alias in node.names):
            lines.append(node.lineno)
        elif isinstance(node, ast.Attribute) and node.attr == "intrinsic" and \
                ast.unparse(node.value).endswith("extending"):
            lines.append(node.lineno)
    return lines


def _sources(root: Path):
    for path in sorted(root.rglob("*.py")):
        yield path.relative_to(PROJECT).as_posix(), path.read_text(encoding="utf-8")


def test_every_kernel_says_why_and_names_the_script_that_measures_it():
    found, kernels = [], 0
    for where, source in _sources(PACKAGE):
        kernels += len(list(_kernels(ast.parse(source))))
        found += undocumented_kernels(source, where)
    assert kernels > 100  # the walk sees the package's kernels
    assert found == []


def test_numbas_intrinsics_live_in_the_kernel_wing_only():
    outside = [f"{where}:{line}" for where, source in _sources(PACKAGE)
               if not where.startswith("mlnb/_kernels/") for line in intrinsic_uses(source)]
    assert outside == []
    assert [where for where, source in _sources(WING) if intrinsic_uses(source)]  # the check sees them there


def test_the_checks_find_a_planted_kernel_and_a_planted_intrinsic():
    planted = '''
from mlnb._kernels.jit import njit
import numba

@njit(cache=True)
def undocumented(x):
    return x

@numba.njit(parallel=True)
def no_script(x):
    """x. Why a kernel: it is fast."""
    return x

@njit
def missing_script(x):
    """x. Why a kernel: it is fast. Measured by experiments/bench_nothing_here.py."""
    return x

@njit(inline="always")
def no_why(x):
    """x. Measured by experiments/bench_serial.py."""
    return x

@njit(cache=True)
def documented(x):
    """x.

    Why a kernel: one pass where numpy makes two. Measured by
    experiments/bench_serial.py."""
    return x

def plain(x):
    return x
'''
    found = undocumented_kernels(planted, "planted.py", scripts={"bench_serial.py"})
    assert [line.split(": ", 1)[0] for line in found] == [
        "planted.py:6 undocumented", "planted.py:6 undocumented", "planted.py:10 no_script",
        "planted.py:15 missing_script", "planted.py:20 no_why"]
    assert intrinsic_uses("from numba.core.extending import intrinsic\n") == [1]
    assert intrinsic_uses("import numba\nf = numba.extending.intrinsic(lambda typingctx, x: None)\n") == [2]
    assert intrinsic_uses("from numba.extending import overload\n") == []
