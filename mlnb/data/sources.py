"""Config ``[data]`` -> Dataset: the one place that knows every data source."""

from __future__ import annotations

import numpy as np

from mlnb.config import DataConfig, FeaturesConfig
from mlnb.data.dataset import Dataset
from mlnb.data.text import TextOptions
from mlnb.errors import MlnbError


def text_options(features: FeaturesConfig) -> TextOptions:
    return TextOptions(vectorizer=features.vectorizer, lowercase=features.lowercase,
                       stop_words=features.stop_words, hash_features=features.hash_features)


def _required(value: str, key: str, source: str) -> str:
    if not value:
        raise MlnbError(f"data.{key}: required when data.source = '{source}'")
    return value


def _load(config: DataConfig, features: FeaturesConfig, seed: int) -> Dataset:
    source = config.source
    if source == "synthetic":
        from mlnb.data.synthetic import make_rcv1_like

        s = config.synthetic
        try:
            return make_rcv1_like(n_documents=s.n_documents, n_features=s.n_features,
                                  n_categories=s.n_categories, words_per_document=s.words_per_document,
                                  extra_topics=s.extra_topics, topical_fraction=s.topical_fraction,
                                  topic_words=s.topic_words, zipf_exponent=s.zipf_exponent,
                                  test_fraction=config.test_fraction, seed=seed)
        except MlnbError as error:  # the generator names its arguments: these are data.synthetic.* keys
            message = str(error)
            raise MlnbError(message if message.startswith(("data.", "test_fraction")) else
                            f"data.synthetic.{message}") from None
    if source == "svmlight":
        from mlnb.data.svmlight import load_svmlight_dataset

        s = config.svmlight
        return load_svmlight_dataset(_required(s.path, "svmlight.path", source), test_path=s.test_path or None,
                                     n_features=s.n_features or None, index_base=s.index_base,
                                     n_categories=s.n_categories or None,
                                     category_names=s.category_names_path or None,
                                     test_fraction=config.test_fraction, seed=seed)
    if source == "rcv1":
        from mlnb.data.rcv1 import load_rcv1

        s = config.rcv1
        return load_rcv1(s.data_home or None, s.download_if_missing, s.split, s.train_size, s.test_size,
                         config.test_fraction, seed)
    if source == "lyrl2004":
        from mlnb.data.rcv1 import load_lyrl2004

        s = config.lyrl2004
        return load_lyrl2004(_required(s.folder, "lyrl2004.folder", source), s.split, s.train_size,
                             s.test_size, config.test_fraction, seed)
    if source == "reuters21578":
        from mlnb.data.reuters import load_reuters21578

        s = config.reuters21578
        return load_reuters21578(_required(s.folder, "reuters21578.folder", source),
                                 min_train_per_topic=s.min_train_per_topic,
                                 min_test_per_topic=s.min_test_per_topic, text_options=text_options(features))
    if source == "arff":
        from mlnb.data.arff import load_arff_dataset

        s = config.arff
        return load_arff_dataset(_required(s.train_path, "arff.train_path", source),
                                 _required(s.test_path, "arff.test_path", source),
                                 _required(s.xml_path, "arff.xml_path", source))
    if source == "text":
        from mlnb.data.text import load_text_dataset

        s = config.text
        return load_text_dataset(_required(s.path, "text.path", source), test_path=s.test_path or None,
                                 format=s.format, header=s.header, text_column=s.text_column,
                                 label_column=s.label_column, labels=s.labels,
                                 label_separator=s.label_separator, negative_labels=s.negative_labels,
                                 encoding=s.encoding, text_options=text_options(features),
                                 test_fraction=config.test_fraction, seed=seed)
    if source == "bundled":
        from mlnb.data.bundled import load_bundled

        return load_bundled(config.bundled.name, test_fraction=config.test_fraction, seed=seed)
    if source == "shards":
        return _load_shards(config, seed)
    raise MlnbError(f"data.source: unknown source {source!r}")  # the config schema prevents this


def _load_shards(config: DataConfig, seed: int) -> Dataset:
    """Binary shards read whole: with a test folder, a given split; else the seeded hash split of the
    documents' ids, the very split a streaming study of the same shards makes."""
    import scipy.sparse as sp

    from mlnb.data.hashing import split_mask
    from mlnb.data.shards import ShardSource

    s = config.shards
    train = ShardSource(_required(s.path, "shards.path", "shards"))

    def whole(source):
        chunks = list(source.chunks(1_000_000))
        if not chunks:
            raise MlnbError(f"{source.folder}: the shards hold no documents")
        return (sp.vstack([c.X for c in chunks], format="csr"), sp.vstack([c.Y for c in chunks], format="csr"),
                np.concatenate([c.ids for c in chunks]))

    X, Y, ids = whole(train)
    if s.test_path:
        X_test, Y_test, _ = whole(ShardSource(s.test_path))
        return Dataset.from_train_test(X, Y, X_test, Y_test, category_names=train.category_names,
                                       feature_names=train.feature_names, name=train.name)
    test = split_mask(ids, seed, config.test_fraction)
    return Dataset(X=X, Y=Y, category_names=train.category_names, train_index=np.flatnonzero(~test),
                   test_index=np.flatnonzero(test), feature_names=train.feature_names, name=train.name)


def _files(config: DataConfig) -> list[str]:
    """The files whose documents make the dataset's rows, in row order (train file first)."""
    source = config.source
    if source == "svmlight":
        return [p for p in (config.svmlight.path, config.svmlight.test_path) if p]
    if source == "text":
        return [p for p in (config.text.path, config.text.test_path) if p]
    if source == "arff":
        return [config.arff.train_path, config.arff.test_path]
    return [f"data.{source}"]


def check_single_label(dataset: Dataset, config: DataConfig) -> None:
    """Every document in exactly one class, or one line naming the file and the first that is not."""
    counts = np.diff(dataset.Y.tocsr().indptr)
    bad = np.flatnonzero(counts != 1)
    if not bad.size:
        return
    row = int(bad[0])
    files = _files(config)
    if len(files) == 2 and row >= dataset.train_index.size and row in set(dataset.test_index.tolist()):
        where, number = files[1], row - dataset.train_index.size + 1  # a given split: test rows after train
    else:
        where, number = files[0], row + 1
    names = [dataset.category_names[k] for k in dataset.Y[row].indices]
    has = f"labels {', '.join(map(repr, names))}" if names else "no label"
    raise MlnbError(f"{where}: document {number} has {has}; task = 'multiclass' needs exactly one class per "
                    f"document ({bad.size} of {counts.size} documents do not have one): use task = 'multilabel'")


def load_dataset(config: DataConfig, seed: int, features: FeaturesConfig | None = None,
                 task: str = "multilabel") -> Dataset:
    """The dataset that ``config`` describes, split and subsampled with ``seed``."""
    dataset = _load(config, features or FeaturesConfig(), seed)
    if task == "multiclass":
        check_single_label(dataset, config)
    return dataset.subsample_train(config.max_train_documents, seed)
