"""Software prefetch for the compiled kernels: ask the CPU to bring a cache line closer, with no effect
on any result.

Kernels that read rows of a large array in a random order (rows of W in the LR regions, the rows of
a minibatch or of a dataset part copied out of the corpus) wait on memory for each row in turn; asking
for a row a few rows ahead keeps several on their way at once. ``llvm.prefetch`` (read, high
locality, data cache) emitted from numba through ``intrinsic``s.
"""

from __future__ import annotations

from mlnb._kernels.jit import HAVE_NUMBA, njit

if HAVE_NUMBA:
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils
    from numba.core.extending import intrinsic

    def _emit_prefetch(context, builder, array_type, array_value, indices, index_types) -> None:
        """llvm.prefetch(&array[indices], read, high locality, data cache)."""
        array = context.make_array(array_type)(context, builder, array_value)
        at = [context.cast(builder, value, value_type, types.intp) for value, value_type in zip(indices, index_types)]
        pointer = cgutils.get_item_pointer(context, builder, array_type, array, at)
        byte_pointer = ir.IntType(8).as_pointer()
        prefetch = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [byte_pointer] + [ir.IntType(32)] * 3),
            "llvm.prefetch.p0i8")
        read, keep, data_cache = (ir.Constant(ir.IntType(32), value) for value in (0, 3, 1))
        builder.call(prefetch, [builder.bitcast(pointer, byte_pointer), read, keep, data_cache])

    def _prefetch_codegen(context, builder, sig, args):
        _emit_prefetch(context, builder, sig.args[0], args[0], args[1:], sig.args[1:])
        return context.get_dummy_value()

    @intrinsic
    def prefetch(typingctx, matrix, row, column):
        """Ask the CPU to bring the cache line of matrix[row, column] closer (no effect on results)."""
        return types.void(matrix, row, column), _prefetch_codegen

    @intrinsic
    def prefetch_at(typingctx, vector, index):
        """Ask the CPU to bring the cache line of vector[index] (1-D) closer (no effect on results)."""
        return types.void(vector, index), _prefetch_codegen

    @njit(cache=True)
    def prefetch_span(vector, start, end):
        """Prefetch vector[start:end] (1-D), one 64-byte line at a time.

        Why a kernel: lets a compiled loop ask for a span of memory ahead of its turn, which no numpy call can.
        Measured by experiments/bench_serial.py (the row copies that call it)."""
        step = max(1, 64 // vector.itemsize)
        for index in range(start, end, step):
            prefetch_at(vector, index)
        if end > start:
            prefetch_at(vector, end - 1)

__all__ = ["HAVE_NUMBA", "prefetch", "prefetch_at", "prefetch_span"]
