"""scikit-learn's bundled single-label data sets as a Dataset (no download, no file).

iris (150 × 4, 3 classes), wine (178 × 13, 3), breast_cancer (569 × 30, 2) and
digits (1,797 × 64 pixel counts 0..16, 10): real-valued or count features, one
class per sample, split seeded and stratified by class so that every class is
in both parts in its proportion. The classes become the categories (one-hot Y),
for ``task = "multiclass"`` or one-vs-rest.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn import datasets
from sklearn.model_selection import train_test_split

from mlnb.data.dataset import Dataset
from mlnb.data.validate import check_features
from mlnb.errors import MlnbError

LOADERS = {"iris": datasets.load_iris, "wine": datasets.load_wine,
           "breast_cancer": datasets.load_breast_cancer, "digits": datasets.load_digits}


def load_bundled(name: str, test_fraction: float = 0.5, seed: int = 0) -> Dataset:
    if name not in LOADERS:
        raise MlnbError(f"data.bundled.name: expected one of {', '.join(map(repr, LOADERS))}, got {name!r}")
    bunch = LOADERS[name]()
    y = np.asarray(bunch.target)
    K = int(y.max()) + 1
    try:
        train, test = train_test_split(np.arange(y.size), test_size=test_fraction, stratify=y, random_state=seed)
    except ValueError as error:  # too few documents on one side for every class
        raise MlnbError(f"data.test_fraction = {test_fraction}: {name} has {y.size} samples in {K} classes, and a "
                        f"stratified split needs every class on both sides ({error})") from None
    Y = sp.csr_matrix((np.ones(y.size, dtype=np.int8), (np.arange(y.size), y)), shape=(y.size, K))
    names = [str(n) for n in bunch.target_names] if hasattr(bunch, "target_names") else [str(k) for k in range(K)]
    features = [str(f) for f in bunch.feature_names] if hasattr(bunch, "feature_names") else None
    return Dataset(X=check_features(np.asarray(bunch.data), f"data.bundled.name = {name!r}"), Y=Y, category_names=names,
                   train_index=np.sort(train), test_index=np.sort(test), feature_names=features, name=name)
