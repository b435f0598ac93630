"""scikit-learn's bundled single-label data sets as a Dataset (no download, no file).

iris (150 × 4, 3 classes), wine (178 × 13, 3), breast_cancer (569 × 30, 2) and
digits (1,797 × 64 pixel counts 0..16, 10): real-valued or count features, one
class per sample. The split is the one rule of every pooled source, a seeded hash
of each sample's id (its row number, ``Dataset.from_arrays``): not stratified, so a
class's share differs a little between the parts; a split that leaves a class
without a training or test sample is refused. The classes become the categories
(one-hot Y), for ``task = "multiclass"`` or one-vs-rest.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from mlnb.data.dataset import Dataset
from mlnb.data.validate import check_features
from mlnb.errors import MlnbError

NAMES = ("iris", "wine", "breast_cancer", "digits")


def load_bundled(name: str, test_fraction: float = 0.5, seed: int = 0) -> Dataset:
    if name not in NAMES:
        raise MlnbError(f"data.bundled.name: expected one of {', '.join(map(repr, NAMES))}, got {name!r}")
    from sklearn import datasets

    bunch = getattr(datasets, f"load_{name}")()
    y = np.asarray(bunch.target)
    K = int(y.max()) + 1
    Y = sp.csr_matrix((np.ones(y.size, dtype=np.int8), (np.arange(y.size), y)), shape=(y.size, K))
    names = [str(n) for n in bunch.target_names] if hasattr(bunch, "target_names") else [str(k) for k in range(K)]
    features = [str(f) for f in bunch.feature_names] if hasattr(bunch, "feature_names") else None
    X = check_features(np.asarray(bunch.data), f"data.bundled.name = {name!r}")
    try:
        data = Dataset.from_arrays(X, Y, names, features, test_fraction=test_fraction, seed=seed, name=name)
    except MlnbError as error:
        raise MlnbError(f"data.test_fraction = {test_fraction}: {name} has {y.size} samples in {K} classes; {error}") \
            from None
    for part, index in (("training", data.train_index), ("test", data.test_index)):
        missing = np.flatnonzero(np.bincount(y[index], minlength=K) == 0)
        if missing.size:  # a class no model can learn, or none to test it on
            raise MlnbError(f"data.test_fraction = {test_fraction}: {name} has {y.size} samples in {K} classes, and "
                            f"the split (a seeded hash of each sample's id, seed {seed}) leaves class "
                            f"{names[missing[0]]!r} without a {part} sample; use a test_fraction nearer 0.5 or another "
                            "seed")
    return data
