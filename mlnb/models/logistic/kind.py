"""Logistic regression as a model kind of a study: how the study builds, starts, streams and (on a device)
fits it."""

from __future__ import annotations

from mlnb.errors import MlnbError
from mlnb.models.logistic import array
from mlnb.models.logistic.estimator import LogisticRegression
from mlnb.models.logistic.options import (LogisticOptions, check_data, fixed_updates, idle_options, least_passes,
                                          minibatch_params, schedule_of, state_per_weight)
from mlnb.models.registry import ModelKind


def _fit_arguments(options: LogisticOptions, fitted: dict, eval_set) -> dict:
    arguments = {}
    if options.init_from:
        start = fitted[options.init_from]
        if start.weights_.shape[0] != start.n_features_in_:  # e.g. Gaussian NB scores [X∘X, X]
            raise MlnbError(f"init_from = {options.init_from!r}: its weights are not one row per feature "
                            f"({start.weights_.shape[0]} rows for {start.n_features_in_} features), so they "
                            "cannot start a logistic regression; start from a count Naive Bayes model")
        arguments.update(coef_init=start.weights_, intercept_init=start.bias_)
    if options.monitor and eval_set is not None:
        arguments["eval_set"] = eval_set
    return arguments


def _fit_streamed(estimator: LogisticRegression, options: LogisticOptions, fitted: dict, trainer):
    """``fit`` over a stream: the minibatch passes over the chunks (solver = "minibatch"), or L-BFGS on
    full gradients summed by the trainer, one pass each (solver = "lbfgs"); from the weights of
    ``init_from`` when it is set (with ``_fit_arguments``'s checks)."""
    start = _fit_arguments(options, fitted, None) if options.init_from else {}  # coef_init, intercept_init
    if options.solver == "lbfgs":  # svrg needs minibatches too: the trainer's minibatch path runs fit_stream
        return estimator.fit_full_batch(trainer.sum_over_chunks, trainer.n_features, trainer.n_categories,
                                        trainer.label_counts(), **start)
    return trainer.minibatch(estimator, **start)


def _params(options: LogisticOptions) -> dict:
    return {**minibatch_params(options), "solver": options.solver, "max_iter": options.max_iter, "tol": options.tol,
            "lbfgs_memory": options.lbfgs_memory, "svrg_step": options.svrg_step,
            "svrg_inner_passes": options.svrg_inner_passes}


KIND = ModelKind(
    name="logistic", estimator=LogisticRegression, options=LogisticOptions,
    help="logistic regression for all categories at once, minibatch AdaGrad/SGD (BIDMach's GLM)",
    describe=lambda o: f"Logistic regression ({o.updater if o.solver == 'minibatch' else o.solver}, all categories"
                       + (f", from {o.init_from}" if o.init_from else "") + ")",
    params=_params, uses=lambda o: [o.init_from] if o.init_from else [],
    fit_arguments=_fit_arguments, tasks=("multilabel", "multiclass"),
    fits_from="minibatch", fit_streamed=_fit_streamed, least_passes=least_passes, state_per_weight=state_per_weight,
    fit_on_device=array.fit_on_device, schedule=fixed_updates, schedule_of=schedule_of, idle_options=idle_options,
    check_data=check_data)  # the minibatch solver (the others: None, on the CPU)
