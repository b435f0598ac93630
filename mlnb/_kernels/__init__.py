"""The kernel wing: the shared low-level pieces that mlnb's compiled model and metric kernels are built on.

The kernels themselves live beside the code they serve (``mlnb.models.logistic.kernels``, ``mlnb.metrics.ranking``,
``mlnb.models._counting``, …); each one's docstring says why it is compiled and names the ``experiments/``
script that measures it, and the numbers live in ``experiments/README.md`` (``tests/test_kernel_wing.py``
checks both). What they share is here, and nothing here knows a model or a metric:

* ``jit``: numba when installed, else the numpy paths; the IEEE fastmath flags of the float kernels; one
  on-disk cache stamp for every file with compiled code; the thread count and the numpy thread pools.
* ``atomic``: atomic integer operations, with which the threads of a parallel loop claim pieces of work.
* ``prefetch``: software prefetch, a row asked for from memory ahead of its turn.
* ``float_bits``: a float from its IEEE bits and Horner's rule, for the vectorised exp and log of the float kernels.
* ``csr``: CSR operations on every thread (column counts, row copies and checks, sort checks, columns, cuts).
* ``memory``: glibc's malloc told to keep large freed blocks for the next fit.

numba's intrinsics (code emitted as LLVM IR) live in this package only. This file imports nothing, so that
importing ``mlnb._kernels.memory`` alone does not start numba.
"""
