"""``data.source = "arff"``: a Mulan multilabel data set, train and test ARFF files and the label XML
(:mod:`mlnb.data.arff`), on its own train/test split."""

from __future__ import annotations

from dataclasses import dataclass

from mlnb.data.registry import Request, SourceKind
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


SOURCE = SourceKind(name="arff", options=ArffConfig, load=load, required=("train_path", "test_path", "xml_path"),
                    split=lambda s, request: given_split_rule("test file", s.test_path),
                    help="a Mulan multilabel data set: train and test ARFF files and its label XML",
                    files=lambda s: [s.train_path, s.test_path])
