"""The options of a logistic-regression model kind (``[models.<name>] kind = "logistic"``): their defaults,
help and bounds in one place (the estimator's constructor defaults are these), and what one fit costs
(``least_passes``, ``state_per_weight``) for the work and memory estimates."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from mlnb.models.logistic.minibatch import UPDATERS
from mlnb.options import option

#: each task's link: K independent sigmoids, or one softmax over K classes
LINKS = {"multilabel": "sigmoid", "multiclass": "softmax"}
#: minibatch: AdaGrad/SGD passes (``estimator``); lbfgs: L-BFGS on the full gradient (``lbfgs.py``);
#: svrg: variance-reduced minibatch steps to the optimum (``svrg.py``)
SOLVERS = ("minibatch", "lbfgs", "svrg")
#: the solvers that minimise F to a tolerance, from full passes (they share max_iter and tol)
TO_OPTIMUM = ("lbfgs", "svrg")
#: bounds of the options that multiply a fit's passes or memory (mlnb.budget estimates what is left within them)
MAX_SOLVER_ITERATIONS = 100_000
MAX_INNER_PASSES = 1_000
MAX_LBFGS_MEMORY = 1_000
#: npasses of any minibatch model (as curve.max_passes): passes over the training data
MAX_PASSES = 100_000
#: svrg_step < this: the step c = η/(h + v/(m·h)) contracts along one coordinate iff η < 2 (``svrg.py``)
MAX_SVRG_STEP = 2.0


@dataclass
class MinibatchOptions:
    """The minibatch solver's options (shared by ``logistic`` and ``nb_logistic``)."""

    updater: str = option("rowwise_adagrad", "update rule: AdaGrad with one step size per word (rowwise_adagrad), "
                          "per coordinate of W (adagrad), or SGD", choices=UPDATERS)
    lrate: float = option(0.1, "learning rate", min=0, exclusive_min=True)
    lrate_per_category: list[float] = option([], "one learning rate per category (overrides lrate)",
                                             min=0, exclusive_min=True)
    batch_size: int = option(1000, "documents per minibatch", min=1)
    npasses: int = option(2, "passes over the training data (at most 100000)", min=1, max=MAX_PASSES)
    l1: float = option(0.0, "L1 regularisation", min=0)
    l2: float = option(1e-4, "L2 regularisation (as scikit-learn's SGD alpha default)", min=0)
    texp: float = option(0.5, "step scale t^(-texp) over minibatches t", min=0)
    vexp: float = option(0.5, "AdaGrad divides by (mean squared gradient)^vexp", min=0)
    epsilon: float = option(1e-8, "added to the AdaGrad denominator", min=0)
    shuffle: bool = option(True, "new random document order every pass")
    kernel: str = option("numba", "minibatch kernel, two-core numba or scipy reference",
                         choices=("numba", "scipy"))
    monitor: bool = option(False, "report the held-out log loss after every pass "
                           "(display only, never used to choose anything)")


@dataclass
class LogisticOptions(MinibatchOptions):
    init_from: str = option("", "name of another model of the study (e.g. a naive_bayes one) whose W and b "
                            "start training; empty = W = 0, b = each category's training log-odds")
    solver: str = option("minibatch", "'minibatch': AdaGrad/SGD passes (the options above); 'lbfgs': L-BFGS on the "
                         "full gradient (OWL-QN when l1 > 0), one pass per evaluation, to the exact optimum of "
                         "(1/n) Σ loss + (l2/2)·‖W‖² + l1·‖W‖₁; 'svrg': variance-reduced minibatch steps "
                         "(batch_size documents) to the same optimum", choices=SOLVERS)
    max_iter: int = option(500, "solver = 'lbfgs': most L-BFGS iterations (each one or a few passes); 'svrg': most "
                           "outer iterations (each 1 + svrg_inner_passes passes); at most 100000 (as npasses)",
                           min=1, max=MAX_SOLVER_ITERATIONS)
    tol: float = option(1e-6, "solver = 'lbfgs' or 'svrg': stop when every |∂F/∂θ| ≤ tol (scikit-learn's gtol; "
                        "with l1, of the minimum-norm subgradient)", min=0,
                        exclusive_min=True)
    svrg_step: float = option(0.02, "solver = 'svrg': η, the step as a share of each coordinate's inverse curvature "
                              "bound (halved whenever an outer iteration raises the objective); below 2, as a step "
                              "of 2 or more overshoots the optimum along every coordinate alone", min=0,
                              exclusive_min=True, max=MAX_SVRG_STEP, exclusive_max=True)
    svrg_inner_passes: int = option(8, "solver = 'svrg': minibatch passes per full-gradient snapshot, at most 1000 "
                                    "(the snapshot's correction goes stale long before)", min=1,
                                    max=MAX_INNER_PASSES)
    lbfgs_memory: int = option(10, "solver = 'lbfgs': (step, gradient change) pairs kept, 2·m·V·K float64 (in the "
                               "memory estimate); more pairs, fewer iterations (passes); at most 1000 (each "
                               "iteration's two-loop recursion costs 4·m·V·K, more than a pass long before)",
                               min=1, max=MAX_LBFGS_MEMORY)


DEFAULTS = LogisticOptions()


def least_passes(options: MinibatchOptions) -> tuple[int, str]:
    """The passes over the training documents one fit makes at least, and the option that sets them: the
    minibatch solver's npasses (always run in full); L-BFGS's first evaluation; SVRG's first outer
    iteration, 1 + svrg_inner_passes (fewer only when the start already meets tol)."""
    solver = getattr(options, "solver", "minibatch")
    if solver == "svrg":
        return 1 + options.svrg_inner_passes, f"svrg_inner_passes = {options.svrg_inner_passes}"
    if solver == "lbfgs":
        return 1, ""
    return options.npasses, f"npasses = {options.npasses}"


def state_per_weight(options: LogisticOptions) -> tuple[float, str]:
    """L-BFGS's m (step, gradient change) pairs: 2·m float64 per weight of W."""
    if options.solver != "lbfgs":
        return 0.0, ""
    return 16.0 * options.lbfgs_memory, f"lbfgs_memory = {options.lbfgs_memory}"


def minibatch_params(options: MinibatchOptions) -> dict:
    """The estimator's keyword arguments from the minibatch options (lrate may be one per category)."""
    return dict(updater=options.updater, lrate=list(options.lrate_per_category) or options.lrate,
                batch_size=options.batch_size, npasses=options.npasses, l1=options.l1, l2=options.l2,
                texp=options.texp, vexp=options.vexp, epsilon=options.epsilon, shuffle=options.shuffle,
                kernel=options.kernel)


def fixed_updates(options: MinibatchOptions, size: int, n_full: int, max_passes: int) -> MinibatchOptions:
    """The options for a training sample of ``size`` of the ``n_full`` documents (curve.schedule =
    "fixed_updates") that make as many updates as the full-size fit, U = npasses·⌈n_full/B⌉: the batch shrinks to
    B′ = min(B, max(10, ⌈size/10⌉)), so that even 100 documents give ten minibatches a pass, and
    npasses′ = max(1, min(max_passes, ⌈U / ⌈size/B′⌉⌉))."""
    updates = options.npasses * math.ceil(n_full / options.batch_size)
    batch = min(options.batch_size, max(10, math.ceil(size / 10)))
    npasses = min(max_passes, math.ceil(updates / math.ceil(size / batch)))
    return replace(options, batch_size=batch, npasses=max(1, npasses))


def schedule_of(options: MinibatchOptions) -> dict:
    """The options a schedule sets, as ``curve.csv`` records them."""
    return {"batch_size": options.batch_size, "npasses": options.npasses}


def idle_options(options: MinibatchOptions) -> dict[str, str]:
    """Options these options make idle -> why (a sweep over one would differ only by noise)."""
    return {"lrate": "lrate_per_category is set"} if options.lrate_per_category else {}


def check_data(options: MinibatchOptions, n_categories: int) -> str:
    """One learning rate per category, when given, for each of the data's categories."""
    per_category = options.lrate_per_category
    if per_category and len(per_category) != n_categories:
        return f"lrate_per_category has {len(per_category)} values but the data has {n_categories} categories"
    return ""
