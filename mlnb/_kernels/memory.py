"""Keep large freed blocks for reuse (glibc): a fit's V × K arrays then cost a memset, not page faults.

An LR fit allocates W and AdaGrad's S, V × K float32 each (19.5 MB apiece for RCV1's 47,236 words
× 103 categories), and NB its count and log-odds matrices. glibc's malloc serves a block at or above
its mmap threshold with fresh pages from the kernel, which are zeroed and mapped one fault at a
time when first touched, and returns them to the kernel when freed. The threshold starts at
128 KiB and rises only when a *larger* block than the threshold is freed, so fit after fit of the
same shape gets fresh pages every time, where reused blocks cost only calloc's memset; sweeps and
learning curves run such fits in a row (measured by hand, no script: experiments/README.md, *LR speed
on a busy machine*).

``reuse_freed_blocks`` sets the mmap threshold to glibc's largest, 32 MiB, and the trim threshold to
64 MiB: the values glibc's own dynamic rule reaches once a 32 MiB block has been freed, set from the
start. Blocks below 32 MiB come from the heap and are reused; at most 64 MiB of free memory at the
heap's top is kept from the kernel. Nothing is changed on another C library, or when the user set
either threshold (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_) or MLNB_SYSTEM_MALLOC.
"""

from __future__ import annotations

import ctypes
import os
import sys

#: mallopt's parameter numbers (malloc.h)
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
#: glibc's largest mmap threshold on 64-bit systems (DEFAULT_MMAP_THRESHOLD_MAX) and the trim
#: threshold its dynamic rule sets beside it (twice the mmap threshold)
MMAP_THRESHOLD = 32 * 2**20
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD
#: environment variables that leave malloc as it is
USER_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MLNB_SYSTEM_MALLOC")


def reuse_freed_blocks() -> bool:
    """Set glibc's mmap and trim thresholds (see the module docstring); True if they were set."""
    if not sys.platform.startswith("linux") or any(name in os.environ for name in USER_SETTINGS):
        return False
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # glibc only: another libc's mallopt may mean something else
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
