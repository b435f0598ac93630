"""What the compiled float functions share (``mlnb.models._float32_math``, ``mlnb.metrics._float64_math``):
a float built from its IEEE bits, and a polynomial by Horner's rule, both plain code that vectorises.

``FLAGS`` are their fastmath flags: IEEE arithmetic but for the sign of zero. No 'reassoc', which would
fold a two-part reduction x − n·ln2_hi − n·ln2_lo into x − n·ln 2 and lose its exactness (measured:
4.5 ulp at x ≈ −86 in float32 instead of ≤ 1); no 'contract' or 'arcp', so that a vector lane and the
loop's scalar remainder give the same bits (see ``mlnb._kernels.jit.IEEE``); no 'nnan' or 'ninf', so that
NaN and ±inf keep their meaning.
"""

from __future__ import annotations

from mlnb._kernels.jit import HAVE_NUMBA, njit

FLAGS = {"nsz"}

if HAVE_NUMBA:
    from llvmlite import ir
    from numba import types
    from numba.core.extending import intrinsic

    def _from_bits(float_type, int_type, ir_float):
        """An intrinsic: the ``float_type`` whose IEEE bits are the ``int_type`` argument (a register
        move: vectorises)."""

        @intrinsic
        def from_bits(typingctx, bits):
            def codegen(context, builder, sig, args):
                return builder.bitcast(args[0], ir_float)

            return float_type(int_type), codegen

        return from_bits

    float32_from_bits = _from_bits(types.float32, types.int32, ir.FloatType())
    float64_from_bits = _from_bits(types.float64, types.int64, ir.DoubleType())

    @njit(cache=True, fastmath=FLAGS, error_model="numpy")
    def horner(x, coefficients):
        """c₀·xⁿ + c₁·xⁿ⁻¹ + … + cₙ (coefficients highest power first), by Horner's rule.

        Why a kernel: a plain loop that numba inlines into the callers' vector loops, where ``np.polyval`` is a call
        per array. Measured by experiments/bench_lr_regularisation.py (through the float32 exponential that calls
        it)."""
        p = coefficients[0]
        for c in coefficients[1:]:
            p = p * x + c
        return p

__all__ = ["FLAGS", "HAVE_NUMBA", "float32_from_bits", "float64_from_bits", "horner"]
