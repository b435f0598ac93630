"""Data sources: each builds a :class:`Dataset` (X, Y, names, split)."""

from mlnb.data.dataset import Dataset, random_split
from mlnb.data.svmlight import load_svmlight_dataset, read_svmlight
from mlnb.data.synthetic import make_rcv1_like

__all__ = ["Dataset", "load_svmlight_dataset", "make_rcv1_like", "random_split", "read_svmlight"]
