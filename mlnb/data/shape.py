"""The shape of a study's data (:class:`DataShape`), and the sizes of the corpora a source knows before reading.

A source declares what it can tell of its data's shape from the config (``SourceKind.shape``), and
``mlnb.budget`` estimates a run's memory from it. This module imports nothing, so that both ``mlnb.budget``
(which the readers import for their size checks) and the data sources may import it.
"""

from __future__ import annotations

from typing import NamedTuple


class DataShape(NamedTuple):
    """What the memory of a run depends on; None where it is not known before reading the data."""

    n_train: int | None
    n_test: int | None
    n_features: int | None
    n_categories: int | None
    nnz: int | None  # stored values of X, train and test


#: the RCV1-v2 corpus, as the rcv1 and lyrl2004 sources hold it: documents, features (stemmed terms), topics
#: and stored values; and the LYRL2004 training documents
RCV1_DOCUMENTS, RCV1_FEATURES, RCV1_CATEGORIES, RCV1_NNZ = 804_414, 47_236, 103, 60_915_113
RCV1_TRAIN = 23_149
