"""Config ``[data]`` -> Dataset: the one place that knows every data source."""

from __future__ import annotations

from mlnb.config import DataConfig
from mlnb.data.dataset import Dataset
from mlnb.data.svmlight import load_svmlight_dataset
from mlnb.data.synthetic import make_rcv1_like
from mlnb.errors import MlnbError


def load_dataset(config: DataConfig, seed: int) -> Dataset:
    """The dataset that ``config`` describes, split and subsampled with ``seed``."""
    if config.source == "synthetic":
        s = config.synthetic
        dataset = make_rcv1_like(n_documents=s.n_documents, n_features=s.n_features,
                                 n_categories=s.n_categories, words_per_document=s.words_per_document,
                                 extra_topics=s.extra_topics, topical_fraction=s.topical_fraction,
                                 topic_words=s.topic_words, zipf_exponent=s.zipf_exponent,
                                 test_fraction=config.test_fraction, seed=seed)
    elif config.source == "svmlight":
        s = config.svmlight
        if not s.path:
            raise MlnbError("data.svmlight.path: required when data.source = 'svmlight'")
        dataset = load_svmlight_dataset(s.path, test_path=s.test_path or None,
                                        n_features=s.n_features or None, index_base=s.index_base,
                                        n_categories=s.n_categories or None,
                                        test_fraction=config.test_fraction, seed=seed)
    else:  # the config schema admits only the sources above
        raise MlnbError(f"data.source: unknown source {config.source!r}")
    return dataset.subsample_train(config.max_train_documents, seed)
