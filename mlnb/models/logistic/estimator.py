r"""Logistic regression for every category at once, by minibatch SGD / AdaGrad (BIDMach's GLM).

One weight matrix W (V × K) and bias b (K,) for all K categories. It minimises, over all categories
together,

    F(W, b) = (1/n) Σ_i Σ_k [softplus(z_ik) − y_ik·z_ik] + (l2/2)·‖W‖² + l1·‖W‖₁,   Z = X·W + b

(b is not regularised), by minibatch steps. Each minibatch B of m documents costs one sparse product
forward and one backward:

    Z = X_B·W + b,   P = σ(Z)                                   (m × K)
    G = X_Bᵀ·(P − Y_B) / m,   g_b = 1ᵀ·(P − Y_B) / m             (the loss's gradient)

and, for every coordinate of W (t counts minibatches from 1; lrate may be one value per category),

    adagrad:          S += G²,   α = lrate · t^(vexp−texp) / (S^vexp + ε)     (α = 0 while S = 0)
    rowwise_adagrad:  S_j += (1/K)·Σ_k G_jk²   (one sum per word j),
                                 α_jk = lrate_k · t^(vexp−texp) / (S_j^vexp + ε)
    sgd:                         α = lrate · t^(−texp)
    W ← the exact solution after a time α of  dw/ds = −G − l2·w − l1·sign(w)   (G held fixed)
      = e^(−l2·α)·W − α·φ(l2·α)·G,   φ(y) = (1 − e^(−y))/y                 (l1 = 0)

(``regularisation.py``; b ← b − α_b·g_b). With texp = vexp = ½ (the defaults) α = lrate/(√S + ε), the
classic AdaGrad step; rowwise_adagrad shares one step size among a word's K categories (row-wise
AdaGrad, as for embedding tables), so a row's step and its catch-up below cost one square root and
one exponential instead of K. The step's fixed points are exactly F's optima, for any α. A row of W that the
minibatch does not touch has G = 0: its step is the regulariser's own flow, and the steps it misses
compose into one, which the kernels apply just before the row is next read and, for every row, at the
end of each pass (exact lazy regularisation; ``minibatch.Updater``). So the cost of a step is that of
the rows it touches, and the result is, up to float32 rounding, the dense update of every row at every
step: a stochastic gradient method on F itself, whatever the batch size. How fast it approaches F's
optimum is AdaGrad's (sublinear) rate: ``experiments/lr_objective.py`` prints the distance per pass;
``solver = "lbfgs"`` reaches the optimum itself.

With ``task = "multiclass"`` (one class per document, Y one-hot) the link is
the softmax instead of the sigmoid, and only the probabilities and the loss
change; the backward product, the regularisation and the updates are the same:

    Z = X_B·W + b,   P_i = softmax(z_i) = exp(z_i − logsumexp(z_i))       (m × K)

which minimises the mean cross-entropy (multinomial logistic regression)

    (1/n) Σ_i [logsumexp(z_i) − z_i·y_i] + (l2/2)·‖W‖² + l1·‖W‖₁.

The learner is split the way BIDMach splits one: a minibatch source (``minibatch.py``:
rows of an in-memory matrix, or chunks of a stream shuffled within a buffer), a step kernel
that takes one minibatch (X_B, Y_B) (``kernels``: a scipy reference and a numba kernel
that compute the same thing), and an updater holding the AdaGrad/SGD state. So besides
``fit`` the estimator has

* ``partial_fit(X, Y)``: one pass over the given documents, continuing the training;
* ``fit_stream(make_chunks, n_features, n_categories)``: passes over a stream of chunks, the
  corpus never in memory at once;
* ``get_state()`` / ``set_state(state)``: everything needed to resume (W, b, the AdaGrad sums,
  the step count, the shuffling generator, ...), and ``average_states`` to mix the states of
  several trainers (parameter mixing, for data-parallel training).

``fit`` is ``npasses`` of those passes over the in-memory source.

With ``solver = "lbfgs"`` the same objective is minimised exactly instead, by L-BFGS on the full
gradient (OWL-QN when l1 > 0; ``lbfgs.py``): a sum over documents, over row blocks in memory or over
the chunks of a stream (``StreamTrainer.sum_over_chunks``, here or on Dask), so every way of reading the data reaches
the same optimum — scikit-learn's ``LogisticRegression`` per category (multinomial in multiclass)
at C = 1/(n·(l1 + l2)) and l1_ratio = l1/(l1 + l2) (with l1 = 0: C = 1/(n·l2)). The minibatch
options (updater, lrate, batch_size, npasses, texp, vexp, epsilon, shuffle, kernel) do not apply to
it; ``max_iter``, ``tol`` and ``lbfgs_memory`` do.

With ``solver = "svrg"`` the same optimum is reached by minibatch steps of ``batch_size`` documents
whose gradient noise is removed by a full gradient at a snapshot every ``svrg_inner_passes`` passes
(SVRG, ``svrg.py``; the exact lazy regularisation above carries over, with the snapshot's gradient
as the drift of the rows a minibatch does not touch). It converges linearly; ``max_iter`` (outer
iterations), ``tol``, ``svrg_step`` and ``svrg_inner_passes`` apply, and it runs in memory and
streamed (on Dask, on one worker).
"""

from __future__ import annotations

import copy
import time
import warnings

import numpy as np
from scipy.special import log_softmax, logsumexp, softmax
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning

from mlnb import progress, timings
from mlnb._kernels.csr import column_counts
from mlnb.errors import MlnbError
from mlnb.models._linear import (
    LinearMultilabelModel,
    as_csr_float32,
    as_label_matrix,
    as_one_hot,
    check_labels,
    prior_log_odds,
)
from mlnb.models.logistic import lbfgs, svrg
from mlnb.models.logistic.kernels import HAVE_NUMBA, KERNELS
from mlnb.models.logistic.minibatch import UPDATERS, ChunkStreamSource, InMemorySource, Updater
from mlnb.models.logistic.options import (DEFAULTS, LINKS, MAX_INNER_PASSES, MAX_LBFGS_MEMORY, MAX_SOLVER_ITERATIONS,
                                          MAX_SVRG_STEP, SOLVERS, TO_OPTIMUM)
from mlnb.models.logistic.passes import DIVERGENCE_FACTOR, duration, format_pass, lrate_too_large, prior_loss

#: seconds between two progress lines within a pass
PROGRESS_SECONDS = 10.0


class _Training:
    """What a training carries from minibatch to minibatch and from pass to pass: the trained
    matrix (W, or W′ with a scale R), b, the updater, the step kernel, the shuffling generator,
    the category counts (N (K,), n) if known, and the divergence reference."""

    def __init__(self, W, b, updater: Updater, kernel, rng, R, link: str, counts=None):
        self.W, self.b, self.updater, self.kernel, self.rng, self.R = W, b, updater, kernel, rng, R
        self.link = link
        self.counts = counts  # (N (K,) float64, n) or None until a pass has counted them
        self.start_loss = None  # mean loss of the starting W, b on the first minibatch
        self.reference = None  # max(all-prior loss, start loss), once both are known
        self.passes = 0
        self.pass_seconds: list[float] = []

    @property
    def units(self) -> int:
        """Loss terms per document: K (multilabel: one per category) or 1 (multiclass)."""
        return self.W.shape[1] if self.link == "sigmoid" else 1


class LogisticRegression(LinearMultilabelModel, BaseEstimator):
    """All-categories logistic regression by minibatch AdaGrad or SGD.

    Parameters
    ----------
    updater : {"adagrad", "rowwise_adagrad", "sgd"}
        "adagrad": one AdaGrad sum per coordinate of W. "rowwise_adagrad": one per word (row of W),
        the mean over categories of the squared gradients, so that a row's step and its lazy L2
        catch-up cost one exponential, not K. "sgd": the schedule alone.
    lrate : float or array of K floats
        Learning rate, one for all categories or one per category.
    batch_size : int
        Documents per minibatch.
    npasses : int
        Passes over the training data.
    l1, l2 : float
        Regularisation strengths.
    texp, vexp : float
        Decay exponents: step scale t^(−texp); AdaGrad divides by (mean G²)^vexp.
    epsilon : float
        Added to the AdaGrad denominator.
    solver : {"minibatch", "lbfgs", "svrg"}
        "minibatch": the AdaGrad/SGD passes (every option above). "lbfgs": L-BFGS on the full
        gradient (OWL-QN when l1 > 0) to the exact optimum of (1/n) Σ_i loss_i + (l2/2)·‖W‖² +
        l1·‖W‖₁ (``lbfgs.py``; only l1, l2, max_iter, tol and lbfgs_memory apply). "svrg":
        variance-reduced minibatch steps of batch_size documents to the same optimum (``svrg.py``;
        l1, l2, batch_size, shuffle, max_iter, tol, svrg_step and svrg_inner_passes apply).
    max_iter : int
        solver = "lbfgs": most iterations; "svrg": most outer iterations.
    tol : float
        solver = "lbfgs" or "svrg": stop when max |∇F| ≤ tol (with l1: of the minimum-norm subgradient).
    lbfgs_memory : int
        solver = "lbfgs": pairs L-BFGS keeps (2·lbfgs_memory·V·K float64 in all).
    svrg_step : float
        solver = "svrg": η, the step as a share of each coordinate's inverse curvature bound, 0 < η < 2.
    svrg_inner_passes : int
        solver = "svrg": minibatch passes per full-gradient snapshot.
    shuffle : bool
        Visit the documents in a new seeded random order every pass.
    random_state : int
        Seed of the shuffling.
    kernel : {"numba", "scipy"}
        Implementation of the minibatch step (identical math).
    task : {"multilabel", "multiclass"}
        "multilabel": a sigmoid per category, Y any 0/1 matrix. "multiclass": one
        softmax over the K classes, Y one-hot (n × K) or class labels 0..K−1 (n,).

    Attributes
    ----------
    weights_ : (V, K) float32,  bias_ : (K,) float32
    untrainable_categories_ : categories without a positive (or a negative) training document
    n_iter_ : int, converged_ : bool (solver = "lbfgs" or "svrg"): iterations, and whether it converged
    history_ : list of dict, one per pass (solver = "lbfgs" or "svrg": one per iteration, with the objective F,
        the mean training loss at the iterate, max |∇f|, passes and seconds so far; with l1 also the
        weights ≠ 0): training loss (before each update; multilabel:
        mean log loss per document and category; multiclass: mean cross-entropy per
        document), held-out loss (the same measure) if an ``eval_set`` was given,
        seconds, documents per second, GFLOP/s.
    weights_prime_ : (V, K) float32, only after ``fit(..., scale=R)``: the trained W′,
        of which ``weights_`` = R ∘ W′.
    """

    def __init__(self, updater=DEFAULTS.updater, lrate=DEFAULTS.lrate, batch_size=DEFAULTS.batch_size,
                 npasses=DEFAULTS.npasses, l1=DEFAULTS.l1, l2=DEFAULTS.l2, texp=DEFAULTS.texp,
                 vexp=DEFAULTS.vexp, epsilon=DEFAULTS.epsilon, shuffle=DEFAULTS.shuffle, random_state=0,
                 kernel=DEFAULTS.kernel, task="multilabel", solver=DEFAULTS.solver, max_iter=DEFAULTS.max_iter,
                 tol=DEFAULTS.tol, lbfgs_memory=DEFAULTS.lbfgs_memory, svrg_step=DEFAULTS.svrg_step,
                 svrg_inner_passes=DEFAULTS.svrg_inner_passes):
        self.updater = updater
        self.lrate = lrate
        self.batch_size = batch_size
        self.npasses = npasses
        self.l1 = l1
        self.l2 = l2
        self.texp = texp
        self.vexp = vexp
        self.epsilon = epsilon
        self.shuffle = shuffle
        self.random_state = random_state
        self.kernel = kernel
        self.task = task
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.lbfgs_memory = lbfgs_memory
        self.svrg_step = svrg_step
        self.svrg_inner_passes = svrg_inner_passes

    @property
    def mixes_parameters(self) -> bool:
        """Whether trainers of this model on parts of the data can be averaged (``average_states``, Dask's
        ``engine.minibatch = "mixing"``): the minibatch solver's state can; L-BFGS and SVRG fit to the optimum
        from full passes, with nothing to mix."""
        return self.solver == "minibatch"

    @property
    def scores_are_joint_log_likelihoods(self) -> bool:
        """True in multiclass: ``decision_function`` gives per-class scores J whose softmax is the
        posterior (not per-category log-odds)."""
        return self.task == "multiclass"

    def _link(self) -> str:
        if self.task not in LINKS:
            raise MlnbError(f"task must be one of {tuple(LINKS)}, got {self.task!r}")
        return LINKS[self.task]

    def _check_params(self, K: int) -> np.ndarray:
        self._check_solver()
        if self.updater not in UPDATERS:
            raise MlnbError(f"updater must be one of {UPDATERS}, got {self.updater!r}")
        if self.kernel not in KERNELS:
            raise MlnbError(f"kernel must be one of {tuple(KERNELS)}, got {self.kernel!r}")
        if self.kernel == "numba" and not HAVE_NUMBA:
            raise MlnbError("kernel = 'numba' needs the numba package; install it or use kernel = 'scipy'")
        for name in ("batch_size", "npasses"):
            value = getattr(self, name)
            if not (isinstance(value, (int, np.integer)) and value >= 1):
                raise MlnbError(f"{name} must be an integer >= 1, got {value!r}")
        for name in ("l1", "l2", "texp", "vexp", "epsilon"):
            if not (np.isfinite(getattr(self, name)) and getattr(self, name) >= 0):
                raise MlnbError(f"{name} must be a finite number >= 0, got {getattr(self, name)!r}")
        lrate = np.broadcast_to(np.asarray(self.lrate, dtype=np.float64), (K,)) if np.ndim(self.lrate) == 0 \
            else np.asarray(self.lrate, dtype=np.float64)
        if lrate.shape != (K,):
            raise MlnbError(f"lrate must be one number or one per category ({K}), got {lrate.size} values")
        if not (np.all(np.isfinite(lrate)) and np.all(lrate > 0)):
            raise MlnbError(f"lrate must be finite and > 0, got {self.lrate!r}")
        return np.ascontiguousarray(lrate, dtype=np.float32)

    def _check_solver(self) -> None:
        if self.solver not in SOLVERS:
            raise MlnbError(f"solver must be one of {SOLVERS}, got {self.solver!r}")
        if self.solver not in TO_OPTIMUM:
            return
        for name, most in (("max_iter", MAX_SOLVER_ITERATIONS), ("lbfgs_memory", MAX_LBFGS_MEMORY),
                           ("svrg_inner_passes", MAX_INNER_PASSES), ("batch_size", None)):
            value = getattr(self, name)
            if not (isinstance(value, (int, np.integer)) and 1 <= value <= (most or value)):
                raise MlnbError(f"{name} must be an integer >= 1{f' and <= {most}' if most else ''}, got {value!r}")
        if not (isinstance(self.tol, (int, float, np.number)) and np.isfinite(self.tol) and self.tol > 0):
            raise MlnbError(f"tol must be a finite number > 0, got {self.tol!r}")
        if not (isinstance(self.svrg_step, (int, float, np.number)) and 0 < self.svrg_step < MAX_SVRG_STEP):
            raise MlnbError(f"svrg_step must be a finite number > 0 and < {MAX_SVRG_STEP:g} (a step of 2 or more "
                            f"overshoots along every coordinate alone), got {self.svrg_step!r}")
        for name in ("l1", "l2"):
            if not (np.isfinite(getattr(self, name)) and getattr(self, name) >= 0):
                raise MlnbError(f"{name} must be a finite number >= 0, got {getattr(self, name)!r}")

    def _minibatch_only(self, what: str) -> None:
        if self.solver != "minibatch":
            raise MlnbError(f"{what} is the minibatch solver's; solver = {self.solver!r} fits by fit (or a study's "
                            "streamed fit)")

    def _labels(self, Y, n: int, link: str, n_categories: int | None = None):
        """Y as CSR int8 (n × K): 0/1 (multilabel), or one-hot from labels or a one-hot matrix (multiclass)."""
        if link == "softmax":
            return as_one_hot(Y, n, n_classes=n_categories).astype(np.int8)
        Y = check_labels(Y, "Y", n_documents=n)  # CSR int8 0/1 already: no float32 copy and back
        if n_categories is not None and Y.shape[1] != n_categories:
            raise MlnbError(f"Y has {Y.shape[1]} categories, but the model has {n_categories}")
        return Y

    @staticmethod
    def _category_counts(category_counts, K: int | None = None) -> tuple[np.ndarray, int]:
        """(N (K,) float64, n) from a user's category_counts = (N_k per category, n documents); K is
        N's length when not given."""
        try:
            N, n = category_counts
            N = np.asarray(N, dtype=np.float64).ravel()
            K = N.size if K is None else K
            valid = N.shape == (K,) and float(n) == int(n) and int(n) >= 1 and np.isfinite(N).all() \
                and (N >= 0).all() and (N <= int(n)).all()
        except (TypeError, ValueError):
            valid = False
        if not valid:
            raise MlnbError(f"category_counts must be (N, n): the documents of each of the {K} categories (0 ≤ N_k ≤ "
                            f"n) and the number of documents n ≥ 1, got {category_counts!r:.200}")
        return N, int(n)

    @staticmethod
    def _scale(scale, V: int, K: int):
        R = None if scale is None else np.ascontiguousarray(scale, dtype=np.float32)  # (V, K)
        if R is not None and (R.shape != (V, K) or not np.isfinite(R).all()):
            raise MlnbError(f"scale must be a finite ({V}, {K}) array, got shape {R.shape}")
        return R

    def _start(self, V: int, K: int, link: str, lrate, coef_init, intercept_init, scale, counts,
               word_counts=None) -> _Training:
        """A new training: W (coef_init or 0), b (intercept_init, else the priors of ``counts``, else
        those of the first buffer, at the first minibatch), a fresh updater and generator."""
        with np.errstate(over="ignore"):  # a value beyond float32 becomes inf, refused below
            W = np.zeros((V, K), dtype=np.float32) if coef_init is None else \
                np.array(coef_init, dtype=np.float32, order="C", copy=True)
        if intercept_init is not None:
            b = np.array(intercept_init, dtype=np.float32, copy=True)
        elif counts is not None:  # start at each category's (class's) smoothed training prior
            b = prior_log_odds(counts[0], counts[1], link).astype(np.float32)
        else:
            b = None
        if W.shape != (V, K) or (b is not None and b.shape != (K,)):
            raise MlnbError(f"coef_init must be ({V}, {K}) and intercept_init ({K},); got {W.shape} "
                            f"and {None if b is None else b.shape}")
        if coef_init is not None and not np.isfinite(W).all() or b is not None and not np.isfinite(b).all():
            raise MlnbError("coef_init and intercept_init must be finite float32 values (|w| < 3.4e38), got "
                            "infinite or NaN values")
        R = self._scale(scale, V, K)
        self.__dict__.pop("weights_prime_", None)  # from an earlier fit with a scale
        updater = Updater(self.updater, lrate, self.texp, self.vexp, self.epsilon, self.l1, self.l2, V, K)
        kernel = KERNELS[self.kernel](V, K, link, word_counts, fresh=True)  # with the fresh updater's S = 0
        training = _Training(W, b, updater, kernel, np.random.default_rng(self.random_state), R, link, counts)
        self._training = training
        self.n_features_in_ = V
        self.history_ = []
        if counts is not None:
            self._note_untrainable(counts)
        return training

    def _continue(self, V: int, K: int, lrate, scale) -> _Training:
        """The current training, after checking that (V, K) and the updater still match; the
        estimator's current hyperparameters apply from here on."""
        training = getattr(self, "_training", None)
        if training is None:
            raise MlnbError("nothing to resume: fit, partial_fit, fit_stream or set_state first")
        if training.W.shape != (V, K):
            raise MlnbError(f"the data have {V} features and {K} categories, but the model was trained with "
                            f"{training.W.shape[0]} and {training.W.shape[1]}")
        if training.updater.rule != self.updater:
            raise MlnbError(f"updater is {self.updater!r} but the training so far used {training.updater.rule!r}; "
                            "its state cannot continue under another rule")
        training.kernel.flush(training.W, training.updater)  # the old hyperparameters up to now, the new from here
        training.updater.configure(lrate, self.texp, self.vexp, self.epsilon, self.l1, self.l2)
        if scale is not None:
            training.R = self._scale(scale, V, K)
        return training

    def _note_untrainable(self, counts) -> None:
        N, n = counts
        # still fitted (their gradient pushes towards "never"), but listed like NB's
        self.untrainable_categories_ = np.flatnonzero((N == 0) | (N == n))

    def fit(self, X, Y, coef_init=None, intercept_init=None, eval_set=None, scale=None):
        """Fit W and b on X (n × V) and Y (n × K, 0/1; multiclass: one-hot, or labels (n,) in 0..K−1).

        coef_init, intercept_init : optional warm start, (V, K) and (K,), e.g.
            the Naive Bayes weights of the same data. Without them W starts at 0
            and b at the training log-odds of each category (its base rate), so
            rare categories need not spend their first steps finding it; in
            multiclass at the log class frequencies log((N_c + ½)/(n + ½K)),
            which is where softmax(b) fits the class frequencies.
        eval_set : optional (X, Y) whose log loss is reported after every pass.
        scale : optional R (V, K): train W′ of W = R ∘ W′ instead of W, i.e. a
            per-category rescaling of the features x̃ = R[:, k] ∘ x (NB-LR's
            log-count ratios; see ``nb_logistic.py``). Regularisation and the
            AdaGrad sums then apply to W′, ``coef_init`` is a W′, and
            ``weights_prime_`` holds W′ beside ``weights_`` = R ∘ W′.

        Raises ``MlnbError`` naming lrate if the weights overflow, or if a pass's mean training
        loss exceeds ``DIVERGENCE_FACTOR`` × that of the all-prior model (or of the start, if
        higher): such a model has diverged, and its scores are no result.

        With ``solver = "lbfgs"``: L-BFGS to the optimum (``fit_full_batch``), from coef_init and
        intercept_init when given; a scale is refused.
        """
        link = self._link()
        X = as_csr_float32(X)
        if self.solver in TO_OPTIMUM:
            if scale is not None:
                raise MlnbError(f"scale (NB-LR's W = R ∘ W′) is the minibatch solver's; solver = {self.solver!r} "
                                "fits W")
            Y = self._labels(Y, X.shape[0], link)

            def sum_over_blocks(function, *args):
                return lbfgs.sum_in_blocks(X, Y, function, *args)

            self._check_solver()
            source = InMemorySource(X, Y, min(int(self.batch_size), X.shape[0]))
            return self.fit_full_batch(sum_over_blocks, X.shape[1], Y.shape[1],
                                       (np.bincount(Y.indices, minlength=Y.shape[1]).astype(np.float64), X.shape[0]),
                                       coef_init, intercept_init, eval_set, minibatches=source.minibatches)
        Y = self._labels(Y, X.shape[0], link)
        n, V = X.shape
        K = Y.shape[1]
        lrate = self._check_params(K)
        counts = (np.bincount(Y.indices, minlength=K).astype(np.float64), n)
        training = self._start(V, K, link, lrate, coef_init, intercept_init, scale, counts,
                               word_counts=column_counts(X.indices, V))
        source = InMemorySource(X, Y, min(self.batch_size, n))
        for _ in range(self.npasses):
            self._run_pass(training, source, self.npasses, eval_set)
        training.kernel.release()
        return self

    def partial_fit(self, X, Y, coef_init=None, intercept_init=None, category_counts=None, eval_set=None,
                    scale=None):
        """One pass over the documents (X, Y) in minibatches, continuing the training so far.

        The first call (on a model not trained yet) starts the training as ``fit`` does: W from
        ``coef_init`` or 0, b from ``intercept_init``, else the priors of ``category_counts`` =
        (N, n) (the documents of each category and in all, e.g. of the whole corpus), else those
        of this (X, Y); every later call continues W, b, the updater's state (AdaGrad sums, step
        count) and the shuffling generator, so that ``npasses`` calls on the same data give
        exactly ``fit`` (and a model restored by ``set_state`` continues where it was saved).
        The estimator's hyperparameters (lrate, l1, l2, ...) apply from the call on; the number
        of categories is fixed by the first call (or by ``category_counts``). With a scale, pass
        it to every call (or once; it is kept).
        """
        self._minibatch_only("partial_fit")
        link = self._link()
        X = as_csr_float32(X)
        training = getattr(self, "_training", None)
        counts = None if training is not None or category_counts is None else \
            self._category_counts(category_counts)
        K = training.W.shape[1] if training is not None else None if counts is None else counts[0].size
        Y = self._labels(Y, X.shape[0], link, K)
        n, V = X.shape
        K = Y.shape[1]
        lrate = self._check_params(K)
        if training is None:
            if counts is None:
                counts = (np.bincount(Y.indices, minlength=K).astype(np.float64), n)
            training = self._start(V, K, link, lrate, coef_init, intercept_init, scale, counts,
                                   word_counts=column_counts(X.indices, V))
        else:
            if coef_init is not None or intercept_init is not None:
                raise MlnbError("coef_init and intercept_init start a training: pass them to fit or to the first "
                                "partial_fit")
            training = self._continue(V, K, lrate, scale)
        self._run_pass(training, InMemorySource(X, Y, min(self.batch_size, n)), None, eval_set)
        training.kernel.release()
        return self

    def fit_stream(self, make_chunks, n_features: int, n_categories: int, category_counts=None, coef_init=None,
                   intercept_init=None, eval_set=None, scale=None, buffer_chunks: int = 1, npasses=None,
                   resume: bool = False):
        """``npasses`` passes over a stream of chunks, the corpus never in memory at once.

        make_chunks : a function returning an iterable of chunks, called once per pass; a chunk
            has ``.X`` (m × n_features, CSR float32) and ``.Y`` (m × n_categories, CSR 0/1;
            multiclass one-hot), e.g. ``lambda: source.chunks(chunk_size)`` of a ``ChunkSource``.
        category_counts : optional (N, n), the documents of each category and in all. b starts at
            their priors (as ``fit``'s) and the divergence check knows the all-prior loss from the
            start. Without them b starts at the priors of the first buffer, and the counts are
            summed during the first pass (the check after pass 1 uses them).
        buffer_chunks : chunks read and shuffled together (``shuffle``); see ``minibatch.py`` for
            what shuffling within a buffer changes. A buffer holding the whole stream gives the
            documents in the very order ``fit`` would (the same seeded permutation).
        npasses : passes to run (default: the estimator's ``npasses``).
        resume : continue the training so far (an earlier fit, partial_fit, fit_stream or
            set_state) instead of starting afresh; coef_init, intercept_init and
            category_counts are then ignored.

        On the same documents in the same order — shuffle = False, or a buffer holding the
        whole stream, and b starting from the same priors — this is ``fit`` exactly, bit for bit.
        Memory: one buffer of chunks, the minibatch, and W, S (V × K each).

        With ``solver = "lbfgs"``: ``fit_full_batch`` over the chunks (one pass per evaluation of
        f; category_counts required; buffer_chunks, npasses and resume do not apply). With
        ``solver = "svrg"`` the same, its minibatches shuffled within buffers of buffer_chunks chunks.
        """
        link = self._link()
        if self.solver in TO_OPTIMUM:
            if scale is not None or resume:
                raise MlnbError(f"scale and resume are the minibatch solver's; solver = {self.solver!r} fits W "
                                "afresh")
            if category_counts is None:
                raise MlnbError(f"solver = {self.solver!r} needs category_counts = (N, n) to fit a stream")
            self._check_solver()

            def sum_over_stream(function, *args):
                total = None
                for chunk in make_chunks():
                    part = function(chunk.X, chunk.Y, *args)
                    total = part if total is None else total + part
                if total is None:
                    raise MlnbError("the stream (make_chunks) gave no chunk")
                return total

            source = ChunkStreamSource(make_chunks, n_features, n_categories, int(self.batch_size), buffer_chunks,
                                       one_hot=link == "softmax")
            return self.fit_full_batch(sum_over_stream, n_features, n_categories,
                                       self._category_counts(category_counts, n_categories), coef_init,
                                       intercept_init, eval_set, minibatches=source.minibatches)
        for name, value in (("n_features", n_features), ("n_categories", n_categories)):
            if not (isinstance(value, (int, np.integer)) and value >= 1):
                raise MlnbError(f"{name} must be an integer >= 1, got {value!r}")
        lrate = self._check_params(n_categories)
        passes = self.npasses if npasses is None else npasses
        if not (isinstance(passes, (int, np.integer)) and passes >= 1):
            raise MlnbError(f"npasses must be an integer >= 1, got {passes!r}")
        source = ChunkStreamSource(make_chunks, n_features, n_categories, self.batch_size, buffer_chunks,
                                   one_hot=link == "softmax")
        if resume:
            training = self._continue(n_features, n_categories, lrate, scale)
        else:
            counts = None if category_counts is None else self._category_counts(category_counts, n_categories)
            training = self._start(n_features, n_categories, link, lrate, coef_init, intercept_init, scale, counts)
        last_pass = training.passes + passes
        for _ in range(passes):
            self._run_pass(training, source, last_pass, eval_set)
        training.kernel.release()
        return self

    def fit_full_batch(self, sum_over_chunks, n_features: int, n_categories: int, category_counts,
                       coef_init=None, intercept_init=None, eval_set=None, minibatches=None):
        """Fit W and b to the optimum of F: by L-BFGS, or OWL-QN when l1 > 0 (``solver = "lbfgs"``), from sums
        over the training documents; or by SVRG (``solver = "svrg"``) from those sums and ``minibatches``.

        sum_over_chunks(function, *args) : Σ over every block of training documents (X CSR m ×
            n_features, Y CSR 0/1 m × n_categories, multiclass one-hot) of ``function(X, Y, *args)``,
            added with ``+`` (``StreamTrainer.sum_over_chunks``, or row blocks of a matrix); one
            call is one pass.
        category_counts : (N (K,), n) of the training documents: the categories that cannot be
            fitted (no positive or no negative document; multiclass: no document) are left out and
            get W_k = 0, b_k = their prior log-odds; the others start at coef_init (or 0) and
            intercept_init (or their priors).
        minibatches(rng) : solver = "svrg": one pass of (X_B, Y_B) minibatches of batch_size documents,
            shuffled by the generator (``InMemorySource.minibatches``, ``ChunkStreamSource.minibatches``).
        """
        link = self._link()
        self._check_solver()
        if self.solver not in TO_OPTIMUM:
            raise MlnbError(f"fit_full_batch fits solver = 'lbfgs' or 'svrg'; this model has solver = {self.solver!r}")
        if self.solver == "svrg" and minibatches is None:
            raise MlnbError("solver = 'svrg' needs minibatches (a function of a generator giving one pass of them)")
        V, K = n_features, n_categories
        N, n = self._category_counts(category_counts, K)
        W = np.zeros((V, K)) if coef_init is None else np.array(coef_init, dtype=np.float64)  # (V, K)
        b = prior_log_odds(N, n, link) if intercept_init is None else np.array(intercept_init, dtype=np.float64)
        if W.shape != (V, K) or b.shape != (K,):
            raise MlnbError(f"coef_init must be ({V}, {K}) and intercept_init ({K},); got {W.shape} and {b.shape}")
        if not (np.isfinite(W).all() and np.isfinite(b).all()):
            raise MlnbError("coef_init and intercept_init must be finite")
        untrainable = (N == 0) | (N == n) if link == "sigmoid" else N == 0
        columns = np.flatnonzero(~untrainable)  # (K′,) the categories optimised
        self.__dict__.pop("weights_prime_", None)
        self._training = None  # nothing for partial_fit or get_state to continue
        if columns.size and self.solver == "svrg":
            def sum_curved(W_, b_):  # one pass: the CurvedPartial of every training document at (W_, b_)
                return sum_over_chunks(svrg.loss_gradient_curvature, W_, b_, link, columns)

            def shuffled(rng):  # minibatches in a new order every pass, or in order without shuffle
                return minibatches(rng if self.shuffle else None)

            solution = svrg.fit_svrg(sum_curved, shuffled, W[:, columns], b[columns], float(self.l1),
                                     float(self.l2), link, batch_size=int(self.batch_size), step=float(self.svrg_step),
                                     inner_passes=int(self.svrg_inner_passes), max_iter=int(self.max_iter),
                                     tol=float(self.tol), rng=np.random.default_rng(self.random_state))
            W[:, columns], b[columns] = solution.W, solution.b
            self.n_iter_, self.converged_, history = solution.n_iter, solution.converged, solution.history
            if not solution.converged:
                warnings.warn(ConvergenceWarning(f"LR SVRG did not reach max |∇F| <= tol = {self.tol:g}: "
                                                 f"{solution.message}"))
        elif columns.size:
            def sum_partial(W_, b_):  # one pass: the Partial of every training document at (W_, b_)
                return sum_over_chunks(lbfgs.loss_and_gradient, W_, b_, link, columns)

            solution = lbfgs.fit_quasi_newton(sum_partial, W[:, columns], b[columns], float(self.l1), float(self.l2),
                                              int(self.max_iter), float(self.tol), link, memory=int(self.lbfgs_memory),
                                              label="LR OWL-QN" if self.l1 > 0 else "LR L-BFGS")
            W[:, columns], b[columns] = solution.W, solution.b
            self.n_iter_, self.converged_, history = solution.n_iter, solution.converged, solution.history
        else:
            self.n_iter_, self.converged_, history = 0, True, []
        W[:, untrainable] = 0.0
        b[untrainable] = prior_log_odds(N, n, link)[untrainable]
        with np.errstate(over="ignore"):
            self.weights_, self.bias_ = W.astype(np.float32), b.astype(np.float32)  # (V, K), (K,)
        if not (np.isfinite(self.weights_).all() and np.isfinite(self.bias_).all()):
            raise MlnbError(f"the {self.solver} weights overflowed float32: raise l2")
        self.n_features_in_ = V
        self.untrainable_categories_ = np.flatnonzero(untrainable)
        self.history_ = history
        if eval_set is not None and history:
            history[-1]["heldout_loss"] = self.mean_log_loss(*eval_set)
        return self

    def _run_pass(self, training: _Training, source, last_pass: int | None, eval_set) -> None:
        """One pass over ``source``'s minibatches; then the checks, ``weights_``, the history and the
        progress line."""
        W, updater, kernel, R, link = training.W, training.updater, training.kernel, training.R, training.link
        K, units = W.shape[1], training.units
        counting = training.counts is None  # a stream without category_counts: count them now
        N = np.zeros(K) if counting else None
        epoch = training.passes + 1
        total = None if training.counts is None else training.counts[1]
        loss, n, nnz = 0.0, 0, 0
        watch, rate = timings.Stopwatch.start(), timings.WorkRate()  # both without numba's compiling
        next_report = watch.started + PROGRESS_SECONDS
        for X_B, Y_B in source.minibatches(training.rng if self.shuffle else None):
            m = X_B.shape[0]
            if training.b is None:  # no priors given: those of the first buffer of the stream
                training.b = prior_log_odds(*source.buffer_counts, link).astype(np.float32)
            batch_loss = kernel.step(X_B, Y_B, W, training.b, updater, R)
            if training.start_loss is None:  # before any update: the loss of the starting W and b
                training.start_loss = batch_loss / (m * units)
            loss += batch_loss
            n += m
            nnz += X_B.nnz
            if counting:
                N += np.bincount(Y_B.indices, minlength=K)
            if progress.is_enabled() and time.perf_counter() >= next_report:
                progress.note(self._format_progress(epoch, last_pass, n, total, rate.update(n)))
                next_report = time.perf_counter() + PROGRESS_SECONDS
        kernel.flush(W, updater)  # the rows untouched since their last minibatch: regularised up to now
        seconds, compiled = watch.stop()  # its compiling (a first run) apart: the rates are the work's
        seconds = max(seconds, 1e-9)
        if n == 0:
            raise MlnbError(f"pass {epoch} saw no documents: the stream (make_chunks) gave no chunk")
        if counting:
            training.counts = (N, n)
            self._note_untrainable(training.counts)
        if training.reference is None:  # the all-prior model's loss, or the start's if higher
            training.reference = max(prior_loss(*training.counts, link), training.start_loss)
        per = n * units  # the loss is per document and category, or per document
        if kernel.weights_overflowed(W) or not np.isfinite(training.b).all():
            raise MlnbError(f"the weights overflowed in pass {epoch}: {self._lrate_too_large(source)}")
        if not loss / per <= DIVERGENCE_FACTOR * training.reference:
            raise MlnbError(f"training diverged in pass {epoch}: mean training loss {loss / per:.3g}, more than "
                            f"{DIVERGENCE_FACTOR:g} × the {training.reference:.3g} of the all-prior (or starting) "
                            f"model; {self._lrate_too_large(source)}")
        training.passes = epoch
        training.pass_seconds.append(seconds)
        self.weights_, self.bias_ = W if R is None else R * W, training.b  # with a scale, W is W′
        if R is not None:
            self.weights_prime_ = W
        # multilabel: per document and category; multiclass: per document (K classes, one loss)
        record = {"pass": epoch, "train_loss": loss / per, "seconds": seconds,
                  "docs_per_second": n / seconds, "gflops": 4.0 * nnz * K / seconds / 1e9}
        if compiled > 0.0:
            record["compile_seconds"] = compiled
        if eval_set is not None:
            record["heldout_loss"] = self.mean_log_loss(*eval_set)
        self.history_.append(record)
        remaining = None if last_pass is None else (last_pass - epoch) * float(np.mean(training.pass_seconds))
        progress.log(format_pass(record, last_pass, remaining), final=last_pass is None or epoch >= last_pass)

    def _lrate_too_large(self, source) -> str:
        """``lrate_too_large`` of this model, with the training features when they are in memory (a stream is
        not read again)."""
        return lrate_too_large(self.lrate, source.X if isinstance(source, InMemorySource) else None)

    @staticmethod
    def _format_progress(epoch: int, last_pass, n: int, total, rate: float | None) -> str:
        """Within a long pass: documents so far, documents/s and, when the total is known, the ETA; no
        rate and no ETA before some work was timed after the kernels compiled (``timings.WorkRate``)."""
        of = "" if last_pass is None else f"/{last_pass}"
        line = f"LR pass {epoch}{of}: {n:,} documents" + ("" if total is None else f" of {total:,}")
        if rate is None:
            return line + " (no rate yet: the kernels were compiling)"
        line += f", {rate:,.0f} docs/s"
        if total is not None:
            later = 0 if last_pass is None else (last_pass - epoch) * total
            line += f", ETA {duration((total - n + later) / rate)}"
        return line

    # -- state: save, restore, average ---------------------------------------------------------
    def get_state(self) -> dict:
        """Everything needed to continue this training, as copies:

        weights (V × K: W, or W′ with a scale), bias (K,), S (V × K AdaGrad sums; None with sgd),
        Sb (K,), t (steps taken), passes (passes done), rng (the shuffling generator's state),
        category_counts ((N, n), or None before a stream's first pass ended), start_loss and
        reference_loss (the divergence check's), task and updater.
        ``set_state`` on a model with the same task and updater continues from it exactly:
        fit(npasses=1), get_state, set_state, partial_fit equals fit(npasses=2).
        """
        self._minibatch_only("get_state")
        training = getattr(self, "_training", None)
        if training is None or training.b is None:
            raise MlnbError("get_state needs a trained model: fit, partial_fit, fit_stream or set_state first")
        counts = None if training.counts is None else (training.counts[0].copy(), training.counts[1])
        return {"weights": training.W.copy(), "bias": training.b.copy(), **training.updater.get_state(),
                "passes": training.passes, "rng": copy.deepcopy(training.rng.bit_generator.state),
                "category_counts": counts, "start_loss": training.start_loss,
                "reference_loss": training.reference, "task": self.task, "updater": self.updater}

    def set_state(self, state: dict):
        """Restore a training saved by ``get_state`` (or mixed by ``average_states``); then
        ``partial_fit`` or ``fit_stream(..., resume=True)`` continue it. The estimator's task and
        updater must be the state's; its other hyperparameters apply from here on. With a scale,
        the state's weights are W′: pass the same scale to the next call."""
        self._minibatch_only("set_state")
        link = self._link()
        for key in ("task", "updater"):
            if key in state and state[key] != getattr(self, key):
                raise MlnbError(f"the state was saved with {key} = {state[key]!r}, this model has "
                                f"{getattr(self, key)!r}")
        W = np.array(state["weights"], dtype=np.float32, order="C", copy=True)
        b = np.array(state["bias"], dtype=np.float32, copy=True)
        if W.ndim != 2 or b.shape != (W.shape[1],):
            raise MlnbError(f"the state's weights must be (V, K) and bias (K,), got {W.shape} and {b.shape}")
        if not (np.isfinite(W).all() and np.isfinite(b).all()):
            raise MlnbError("the state's weights and bias must be finite float32 values, got infinite or NaN values")
        V, K = W.shape
        lrate = self._check_params(K)
        updater = Updater(self.updater, lrate, self.texp, self.vexp, self.epsilon, self.l1, self.l2, V, K)
        updater.set_state(state)
        rng = np.random.default_rng(self.random_state)
        if state.get("rng") is not None:
            rng.bit_generator.state = copy.deepcopy(state["rng"])
        counts = state.get("category_counts")
        counts = None if counts is None else self._category_counts(counts, K)
        training = _Training(W, b, updater, KERNELS[self.kernel](V, K, link), rng, None, link, counts)
        training.passes = int(state.get("passes", 0))
        training.start_loss = state.get("start_loss")
        training.reference = state.get("reference_loss")
        self._training = training
        self.__dict__.pop("weights_prime_", None)
        self.weights_, self.bias_, self.n_features_in_, self.history_ = W, b, V, []
        if counts is not None:
            self._note_untrainable(counts)
        else:
            self.untrainable_categories_ = np.array([], dtype=np.int64)
        return self

    def mean_log_loss(self, X, Y) -> float:
        """Mean log loss of the current weights on (X, Y): per document and category (multilabel),
        or the mean cross-entropy per document, (1/n) Σ_i logsumexp(z_i) − z_i·y_i (multiclass)."""
        Z = self.decision_function(X).astype(np.float64)  # (n, K)
        if self._link() == "softmax":
            Y = as_one_hot(Y, Z.shape[0], n_classes=Z.shape[1])
            return float((logsumexp(Z, axis=1).sum() - Z[Y.toarray().astype(bool)].sum()) / Z.shape[0])
        Y = as_label_matrix(Y, Z.shape[0])
        return float((np.logaddexp(0.0, Z).sum() - Z[Y.toarray().astype(bool)].sum()) / Z.size)

    # -- scoring: the mixin's sigmoid scoring for multilabel, the softmax for multiclass ---------
    def predict_log_proba(self, X) -> np.ndarray:
        """log P, float64 (documents, categories): multiclass log softmax(z) = z − logsumexp(z)
        (the row max subtracted first, so never log 0 of an underflowed softmax); multilabel
        log σ(z) = −softplus(−z)."""
        Z = self.decision_function(X).astype(np.float64)  # (n, K)
        if self._link() == "softmax":
            return log_softmax(Z, axis=1)
        return -np.logaddexp(0.0, -Z)

    def predict_proba(self, X, dtype=np.float64) -> np.ndarray:
        """P(class | document) = softmax(X·W + b) in multiclass (each row sums to 1), else the
        mixin's σ(X·W + b); shape (documents, categories)."""
        if self._link() == "sigmoid":
            return super().predict_proba(X, dtype=dtype)
        return softmax(self.decision_function(X).astype(np.float64), axis=1).astype(dtype, copy=False)

    def predict(self, X, threshold=None) -> np.ndarray:
        """Multiclass: the most probable class, argmax_k z_k, shape (documents,). Multilabel: the
        mixin's 0/1 matrix, P ≥ threshold (default 0.5); a threshold has no meaning in multiclass."""
        if self._link() == "sigmoid":
            return super().predict(X, 0.5 if threshold is None else threshold)
        if threshold is not None:
            raise MlnbError("threshold applies to task = 'multilabel'; multiclass predicts the most "
                            "probable class")
        return np.argmax(self.decision_function(X), axis=1)
