"""``data.source = "bundled"``: one of scikit-learn's bundled single-label sets (:mod:`mlnb.data.bundled`)."""

from __future__ import annotations

from dataclasses import dataclass

from mlnb.data.registry import Request, SourceKind, unknown_shape
from mlnb.options import option

BUNDLED = ("iris", "wine", "breast_cancer", "digits")


@dataclass
class BundledConfig:
    name: str = option("iris", "one of scikit-learn's bundled single-label sets (real-valued or pixel "
                       "features), split by a seeded hash of each sample's id", choices=BUNDLED)


def load(s: BundledConfig, request: Request):
    from mlnb.data.bundled import load_bundled

    return load_bundled(s.name, test_fraction=request.test_fraction, seed=request.seed)


SOURCE = SourceKind(name="bundled", options=BundledConfig, load=load, labels="single", shape=unknown_shape,
                    help="scikit-learn's iris, wine, breast_cancer or digits (no file)")
