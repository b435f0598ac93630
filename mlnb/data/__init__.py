"""Data sources: each builds a :class:`Dataset` (X, Y, names, split)."""

from mlnb.data.arff import load_arff_dataset
from mlnb.data.dataset import Dataset, random_split
from mlnb.data.rcv1 import load_lyrl2004, load_rcv1
from mlnb.data.reuters import load_reuters21578
from mlnb.data.svmlight import load_svmlight_dataset, read_svmlight
from mlnb.data.synthetic import make_rcv1_like
from mlnb.data.text import load_text_dataset

__all__ = ["Dataset", "load_arff_dataset", "load_lyrl2004", "load_rcv1", "load_reuters21578",
           "load_svmlight_dataset", "load_text_dataset", "make_rcv1_like", "random_split", "read_svmlight"]
