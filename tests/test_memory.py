"""mlnb._kernels.memory: large freed blocks are reused (glibc), so repeated fits do not fault in fresh pages."""

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt: Linux only")

# Where a fresh 20 MB float32 array lives, and whether freeing it and allocating again returns the
# same block (the heap reuses it; with glibc's default threshold it is a fresh mmap each time).
PROBE = textwrap.dedent("""
    import numpy as np
    import mlnb._kernels.jit  # the kernels' import applies the setting
    from mlnb._kernels.memory import reuse_freed_blocks

    def in_heap(address):
        for line in open("/proc/self/maps"):
            if line.rstrip().endswith("[heap]"):
                start, end = (int(part, 16) for part in line.split()[0].split("-"))
                if start <= address < end:
                    return True
        return False

    a = np.zeros(5_000_000, dtype=np.float32)
    print(in_heap(a.ctypes.data), reuse_freed_blocks())
""")


def run_probe(**env) -> list[str]:
    environment = {**os.environ, **env}
    for name in ("MLNB_SYSTEM_MALLOC", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"):
        if name not in env:
            environment.pop(name, None)
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=environment,
                          check=True)
    return done.stdout.split()


def test_a_20_mb_array_comes_from_the_heap_after_importing_the_kernels():
    try:
        import ctypes
        ctypes.CDLL(None).gnu_get_libc_version
    except AttributeError:
        pytest.skip("not glibc")
    assert run_probe() == ["True", "True"]


def test_the_users_own_malloc_settings_are_left_alone():
    assert run_probe(MLNB_SYSTEM_MALLOC="1") == ["False", "False"]
    assert run_probe(MALLOC_TRIM_THRESHOLD_="131072")[1] == "False"
