r"""Logistic regression for every category at once (BIDMach's GLM): the model family in one package.

    estimator       ``LogisticRegression``: the objective F(W, b) it minimises and its three solvers
                    (the formulas are in its docstring)
    options         the kind's options (``LogisticOptions``; ``MinibatchOptions``, shared with NB-LR) and
                    what one fit costs (``least_passes``, ``state_per_weight``)
    passes          what every minibatch pass checks and reports (divergence, the all-prior loss, its line)
    minibatch       minibatch sources (in memory, a stream shuffled within a buffer) and the AdaGrad/SGD
                    ``Updater``; ``average_states`` mixes trainers' states (parameter mixing)
    kernels         one minibatch step: a scipy reference and the numba kernels (the same numbers)
    regularisation  the exact step after a time α of dw/ds = −g − l2·w − l1·sign(w), inlined by the kernels
    lbfgs           L-BFGS / OWL-QN on the full gradient (``solver = "lbfgs"``)
    svrg            variance-reduced minibatch steps to the optimum (``solver = "svrg"``)
    array           the minibatch passes on an array device (CuPy on a GPU; ``ModelKind.fit_on_device``)
    kind            the model kind a study names (``kind = "logistic"``)
"""

from mlnb.models.logistic.estimator import LogisticRegression
from mlnb.models.logistic.kind import KIND
from mlnb.models.logistic.minibatch import average_states
from mlnb.models.logistic.options import (LINKS, SOLVERS, LogisticOptions, MinibatchOptions, least_passes,
                                          minibatch_params)
from mlnb.models.logistic.passes import DIVERGENCE_FACTOR, lrate_too_large

__all__ = ["DIVERGENCE_FACTOR", "KIND", "LINKS", "SOLVERS", "LogisticOptions", "LogisticRegression",
           "MinibatchOptions", "average_states", "least_passes", "lrate_too_large", "minibatch_params"]
