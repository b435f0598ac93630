"""Atomic integer operations for the compiled kernels (numba has none of its own), emitted as LLVM's
``atomicrmw`` through ``intrinsic``s.

Threads of a parallel region that take pieces of work from one shared counter (``claim``) balance
themselves: a thread that is slowed (a core shared with another process, pages new to the process
that the machine must fault in) takes fewer pieces, where a fixed share per thread makes every other
thread wait for the slowest. Which thread does a piece never changes what is computed: each piece
writes its own places, so the results are the same whatever the thread count.
"""

from __future__ import annotations

from mlnb._kernels.jit import HAVE_NUMBA, njit

#: a loop over rows on every thread is cut into pieces that the threads claim in turn (``piece_rows``):
#: this many pieces a thread ...
PIECES_PER_THREAD = 8
#: ... of at least this many rows (a claim is an atomic addition on one shared counter: 256 rows of
#: ~77 RCV1-shaped non-zeros are microseconds of copying or scoring) and at most this many (a large
#: loop in many pieces, so that the last piece claimed is a small part of any thread's work)
PIECE_ROWS = (256, 4096)


def piece_rows(n_rows: int, workers: int) -> int:
    """Rows a claimed piece of a loop over ``n_rows`` rows on ``workers`` threads: ``PIECES_PER_THREAD``
    pieces a thread, each within ``PIECE_ROWS`` rows."""
    low, high = PIECE_ROWS
    return min(high, max(low, -(-n_rows // (PIECES_PER_THREAD * max(1, workers)))))


if HAVE_NUMBA:
    from numba import types
    from numba.core import cgutils
    from numba.core.extending import intrinsic

    def _atomic_codegen(operation: str, value=None):
        """Code for ``array[index] <operation>= operand`` done atomically (int64), returning the value
        before: the operand is ``value`` when given, else the call's third argument."""

        def codegen(context, builder, sig, args):
            array_type = sig.args[0]
            array = context.make_array(array_type)(context, builder, args[0])
            pointer = cgutils.get_item_pointer(context, builder, array_type, array, [args[1]])
            operand = context.get_constant(types.int64, value) if value is not None else \
                context.cast(builder, args[2], sig.args[2], types.int64)
            return builder.atomic_rmw(operation, pointer, operand, "monotonic")

        return codegen

    @intrinsic
    def claim(typingctx, counters, index):
        """counters[index]++ atomically (int64 counters); returns the value before (the piece of work claimed)."""
        return types.int64(counters, index), _atomic_codegen("add", 1)

    @intrinsic
    def exchange(typingctx, marks, index, value):
        """marks[index] = value atomically (int64 marks); returns the value before (another value: this caller
        was first)."""
        return types.int64(marks, index, value), _atomic_codegen("xchg")

    @njit(inline="always")
    def claim_rows(claimed, rows_a_piece, n):
        """(start, stop): the rows of the next piece of ``rows_a_piece`` rows of n, claimed from claimed[0];
        start ≥ n when none is left. The loop of every worker of a region::

            while True:
                start, stop = claim_rows(claimed, rows_a_piece, n)
                if start >= n:
                    break
                for i in range(start, stop): ...

        Why a kernel: inlined into each worker's loop, so a worker takes its next piece of rows with one atomic
        addition, never returning to Python. Measured by experiments/bench_serial.py (the row copies and scoring in
        claimed pieces).
        """
        start = claim(claimed, 0) * rows_a_piece
        return start, min(n, start + rows_a_piece)
