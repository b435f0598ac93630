"""``data.source = "rcv1"`` and ``"lyrl2004"``: RCV1-v2 from scikit-learn's cache or from the original
LYRL2004 files (:mod:`mlnb.data.rcv1`), on the LYRL2004 split, swapped, or a seeded random split of given sizes."""

from __future__ import annotations

from dataclasses import dataclass

from mlnb.data.registry import Request, SourceKind
from mlnb.data.shape import RCV1_CATEGORIES, RCV1_DOCUMENTS, RCV1_FEATURES, RCV1_NNZ, RCV1_TRAIN, DataShape
from mlnb.options import option

SPLITS = ("lyrl2004", "swapped", "random")


@dataclass
class _SplitOptions:
    split: str = option("lyrl2004", "'lyrl2004': the 23,149 LYRL2004 training documents train, the rest "
                        "test; 'swapped': the reverse; 'random': a seeded split of all", choices=SPLITS)
    train_size: int = option(0, "random split: training documents; 0 = all not in the test part", min=0)
    test_size: int = option(0, "random split: test documents; 0 = data.test_fraction of all", min=0)


@dataclass
class Rcv1Config(_SplitOptions):
    data_home: str = option("", "scikit-learn's data cache folder; empty = its default (~/scikit_learn_data)")
    download_if_missing: bool = option(False, "let scikit-learn download RCV1 (~650 MB) when not cached")


@dataclass
class Lyrl2004Config(_SplitOptions):
    folder: str = option("", "folder with lyrl2004_vectors_train.dat, lyrl2004_vectors_test_pt0..3.dat "
                         "(optionally .gz) and rcv1-v2.topics.qrels")


def load_rcv1(s: Rcv1Config, request: Request):
    from mlnb.data.rcv1 import load_rcv1

    return load_rcv1(s.data_home or None, s.download_if_missing, s.split, s.train_size, s.test_size,
                     request.test_fraction, request.seed)


def load_lyrl2004(s: Lyrl2004Config, request: Request):
    from mlnb.data.rcv1 import load_lyrl2004

    return load_lyrl2004(s.folder, s.split, s.train_size, s.test_size, request.test_fraction, request.seed)


def split(s: _SplitOptions, request: Request) -> str:
    from mlnb.data.rcv1 import split_rule

    return split_rule(s.split, s.train_size, s.test_size, request.test_fraction, request.seed)


def _shape(name: str):
    def shape(s: _SplitOptions, data, features):
        """The corpus's sizes; the parts: LYRL2004's (or swapped), or train_size / test_size (0: the rest /
        round(RCV1_DOCUMENTS · data.test_fraction))."""
        if s.split == "random":
            n_test = s.test_size or round(RCV1_DOCUMENTS * data.test_fraction)
            n_train = s.train_size or RCV1_DOCUMENTS - n_test
        else:
            n_train, n_test = RCV1_TRAIN, RCV1_DOCUMENTS - RCV1_TRAIN
            if s.split == "swapped":
                n_train, n_test = n_test, n_train
        keys = {"n_documents": f"data.{name}.split = {s.split!r}", "nnz": f"data.source = {name!r}",
                "n_features": f"data.source = {name!r}", "n_categories": f"data.source = {name!r}"}
        return DataShape(n_train, n_test, RCV1_FEATURES, RCV1_CATEGORIES, RCV1_NNZ), keys

    return shape


RCV1 = SourceKind(name="rcv1", options=Rcv1Config, load=load_rcv1, split=split, labels="multi", shape=_shape("rcv1"),
                  help="RCV1-v2 (804,414 documents, 103 topics) from scikit-learn's cache")
LYRL2004 = SourceKind(name="lyrl2004", options=Lyrl2004Config, load=load_lyrl2004, split=split, required=("folder",),
                      labels="multi", shape=_shape("lyrl2004"),
                      help="RCV1-v2 from the original LYRL2004 vector and topic files")
