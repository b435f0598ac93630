"""The train/test split of a stream: a seeded hash of each document's id.

A document is a test document when

    u(seed, id) = (splitmix64(splitmix64(seed) XOR id) >> 11) · 2^-53   <   test_fraction

u is a 53-bit fraction in [0, 1), so the split needs no pass over the corpus, no
state, and gives every document the same side whatever the chunk size, the
partitioning (Dask), the order of reading, or the machine. Over n documents the
test share is test_fraction ± sqrt(test_fraction · (1 − test_fraction) / n) (one
standard deviation), like independent coin flips.

splitmix64 (Steele, Lea, Flood 2014; the seeding generator of xoroshiro) is
a bijection of 64-bit words whose output bits each depend on every input bit.

Other uses of the hash take their own seed, ``purpose_seed(seed, p) = seed + p · 2^32``
(seeds are below 2^32), so that they are independent of the split and of each other:
p = 0 is the train/test split itself, p = ``SAMPLE_PURPOSE`` the training sample of
``data.max_train_documents`` (the n training documents with the smallest u), and the study's
validation parts take theirs (``mlnb.study.documents.PURPOSES``).
"""

from __future__ import annotations

import numpy as np

from mlnb.errors import MlnbError

_MASK64 = (1 << 64) - 1
#: ids of file k of a source of several files start at k << FILE_ID_SHIFT (2^40 ≈ 10^12 documents a file)
FILE_ID_SHIFT = 40
#: p of the training sample's seed (``mlnb.study.documents.PURPOSES["sample"]``)
SAMPLE_PURPOSE = 3
_GOLDEN = 0x9E3779B97F4A7C15
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB


def _splitmix64_int(z: int) -> int:
    """splitmix64 of one Python int (for the seed)."""
    z = (z + _GOLDEN) & _MASK64
    z = ((z ^ (z >> 30)) * _MIX1) & _MASK64
    z = ((z ^ (z >> 27)) * _MIX2) & _MASK64
    return z ^ (z >> 31)


def splitmix64(z: np.ndarray) -> np.ndarray:
    """splitmix64 of each uint64 (arithmetic modulo 2^64)."""
    z = np.asarray(z, dtype=np.uint64) + np.uint64(_GOLDEN)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(_MIX1)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(_MIX2)
    return z ^ (z >> np.uint64(31))


def hash_unit(ids, seed: int) -> np.ndarray:
    """u(seed, id) in [0, 1) for each id (float64)."""
    ids = np.asarray(ids)
    if ids.size and (ids.dtype.kind not in "iu" or ids.min() < 0):
        raise MlnbError("document ids must be non-negative integers")
    if not (isinstance(seed, (int, np.integer)) and seed >= 0):
        raise MlnbError(f"seed must be a non-negative integer, got {seed!r}")
    key = np.uint64(_splitmix64_int(int(seed) & _MASK64))
    h = splitmix64(ids.astype(np.uint64) ^ key)
    return (h >> np.uint64(11)).astype(np.float64) * 2.0**-53


def purpose_seed(seed: int, purpose: int) -> int:
    """The seed of the hash for purpose ``purpose`` (0: the split itself): seed + purpose · 2^32."""
    return int(seed) + (int(purpose) << 32)


def split_mask(ids, seed: int, test_fraction: float) -> np.ndarray:
    """True where a document is a test document (bool array shaped like ``ids``)."""
    if not 0.0 < test_fraction < 1.0:
        raise MlnbError(f"test_fraction must be in (0, 1), got {test_fraction}")
    return hash_unit(ids, seed) < test_fraction
