"""``data.source = "arff"``: a Mulan multilabel data set, train and test ARFF files and the label XML
(:mod:`mlnb.data.arff`), on its own train/test split."""

from __future__ import annotations

from dataclasses import dataclass

from mlnb.data.registry import Request, SourceKind, unknown_shape
from mlnb.data.splits import given_split_rule
from mlnb.options import option


@dataclass
class ArffConfig:
    train_path: str = option("", "Mulan training ARFF file")
    test_path: str = option("", "Mulan test ARFF file")
    xml_path: str = option("", "Mulan XML file naming the label attributes")


def load(s: ArffConfig, request: Request):
    from mlnb.data.arff import load_arff_dataset

    return load_arff_dataset(s.train_path, s.test_path, s.xml_path)


def detect(look):
    """``mlnb init``: an ``.arff`` file, or a folder holding some (the training one first), with its train/test
    partner and the Mulan label XML beside it."""
    import re

    import numpy as np

    from mlnb.data.arff import load_arff_dataset
    from mlnb.data.detect import Detected, count_labels, partner
    from mlnb.errors import MlnbError

    def is_arff(path):
        return path.name.lower().endswith((".arff", ".arff.gz"))

    if look.is_folder:
        arffs = [f for f in look.files if is_arff(f)]
        if not arffs:
            return None
        path = sorted(arffs, key=lambda f: ("test" in f.name.lower(), f.name))[0]
    elif is_arff(look.path):
        path = look.path
    else:
        return None
    train = path
    test = partner(path, "train", "test")
    if test is None and "test" in path.name.lower():
        train, test = partner(path, "test", "train"), path
    if train is None or test is None:
        raise MlnbError(f"{path}: an ARFF file without its train/test partner (e.g. enron-train.arff beside "
                        "enron-test.arff): data.source = 'arff' reads a Mulan train and test pair and its XML")
    stem = re.sub(r"[-_.]?train$", "", train.name.split(".arff")[0], flags=re.IGNORECASE)
    xmls = [train.with_name(stem + ".xml")] + sorted(train.parent.glob("*.xml"))
    xml = next((x for x in xmls if x.is_file()), None)
    if xml is None:
        raise MlnbError(f"{train}: no Mulan label XML beside it ({stem}.xml) naming the label attributes")
    dataset = load_arff_dataset(train, test, xml)
    found = Detected("arff", {"train_path": str(train), "test_path": str(test), "xml_path": str(xml)},
                     "a Mulan ARFF train/test pair and its label XML")
    found.n_documents = dataset.n_documents
    positives = np.asarray(dataset.Y.sum(axis=0)).ravel()
    found.documents_per_category = dict(zip(dataset.category_names, map(int, positives)))
    count_labels(found, dataset.Y.tocsr(), dataset.X.data)
    return found


SOURCE = SourceKind(name="arff", options=ArffConfig, load=load, required=("train_path", "test_path", "xml_path"),
                    split=lambda s, request: given_split_rule("test file", s.test_path),
                    help="a Mulan multilabel data set: train and test ARFF files and its label XML",
                    files=lambda s: [s.train_path, s.test_path],
                    labels="either", shape=unknown_shape, detect=detect, detect_order=20)
