"""The work a command asks for, counted before the first fit against what one command may do.

A key such as a sweep grid of 10⁶ settings or svrg_inner_passes = 1000 is valid on its own, yet a command
may multiply it into weeks of fitting. Its work is counted in two units that the config alone sets (whatever
the data), beside the memory estimate of :mod:`mlnb.budget`:

    F  model fits: (sweep) (settings × sweep.repeats + the refit) × the fits of a setting; (curve) sizes ×
       curve.seeds × the fits of the models; (run) the fits of the models. A model's fits by one study loop
       are 1, or 1 + eval.folds (kfold) or 2 (a split with eval.refit) where its decision rule or the
       calibration learns from held-out scores. Against engine.max_fits, before any data is read.
    P  passes over the fits' training documents: Σ over the fits of the least passes of the fit's options
       (its kind's ``least_passes``: npasses, 1 + svrg_inner_passes, 1 for a solver to a tolerance).
       Against engine.max_total_passes, before the first fit.

A refusal is one line naming the keys that multiply the work and how to have less.
"""

from __future__ import annotations

from typing import NamedTuple

from mlnb.config import fit_order
from mlnb.decision import LEARNED_ON_HELD_OUT
from mlnb.errors import MlnbError
from mlnb.models import get_kind


class Work(NamedTuple):
    """``fits`` model fits (``factors`` says what multiplies them, ``remedy`` how to have fewer), making at
    least ``passes`` passes (0: not counted yet), the most of them by a fit of option ``heaviest``."""

    fits: int
    factors: str
    remedy: str
    passes: int = 0
    heaviest: str = ""


def fit_passes(spec) -> tuple[int, str]:
    """(the least passes one fit of model ``spec`` makes, the key that sets them: 'models.lr.npasses = 2', or ''
    when no option does)."""
    passes, key = get_kind(spec.kind).least_passes(spec.options)
    return int(passes), f"models.{spec.name}.{key}" if key else ""


def loop_fits(config, spec) -> int:
    """Fits of model ``spec`` by one study loop (``mlnb.study.run_on``): one, and where its decision rule or the
    calibration learns from held-out scores, eval.folds more (kfold) or one more (a split with eval.refit)."""
    ev = config.eval
    rule = spec.decision or ev.decision
    held_out = config.task != "multiclass" and (rule in LEARNED_ON_HELD_OUT or ev.calibration != "none")
    if not held_out:
        return 1
    return 1 + (ev.folds if ev.validation == "kfold" else int(ev.refit))


def _passes(config, specs, times: int) -> tuple[int, str, int]:
    """(Σ of the least passes of ``times`` study loops of ``specs``, the heaviest fit's key, its passes)."""
    total, heaviest, most = 0, "", 0
    for spec in specs:
        passes, key = fit_passes(spec)
        total += times * loop_fits(config, spec) * passes
        if passes > most:
            heaviest, most = key, passes
    return total, heaviest, most


def _held_out(config, specs) -> str:
    """' (with eval.folds = 5)' (or eval.refit) where held-out fits multiply the fits of ``specs``."""
    if all(loop_fits(config, spec) == 1 for spec in specs):
        return ""
    return f" (with eval.folds = {config.eval.folds})" if config.eval.validation == "kfold" else " (with eval.refit)"


def study_work(config) -> Work:
    """A run: every enabled model fitted by one study loop."""
    models = config.study_models()
    fits = sum(loop_fits(config, spec) for spec in models)
    passes, heaviest, _ = _passes(config, models, 1)
    factors = f"{len(models)} model{'s' * (len(models) > 1)}{_held_out(config, models)}"
    return Work(fits, factors, "fewer models or eval.folds", passes, heaviest)


def curve_work(config, points: int) -> Work:
    """A learning curve: every enabled model at ``points`` training sizes × curve.seeds samples, each fit
    counted at the passes of the config's options (curve.schedule = 'fixed_updates' gives a small sample more
    passes over fewer documents)."""
    models, seeds = config.study_models(), config.curve.seeds
    per_loop = sum(loop_fits(config, spec) for spec in models)
    passes, heaviest, _ = _passes(config, models, points * seeds)
    factors = (f"{points} sizes (curve.sizes) × {seeds} seeds (curve.seeds) × {per_loop} fits of "
               f"{len(models)} models{_held_out(config, models)}")
    return Work(points * seeds * per_loop, factors, "fewer curve.sizes or curve.seeds", passes, heaviest)


def sweep_work(config, n_settings: int, model: str, settings: list | None = None) -> Work:
    """A sweep: ``n_settings`` settings × sweep.repeats, then the chosen one refitted (sweep.test), each a study
    loop of ``model`` and the models it starts from; the passes counted when the settings' configs are given."""
    s = config.sweep
    loops = n_settings * s.repeats + int(s.test)
    enabled = [spec.name for spec in config.study_models()]
    specs = fit_order(config, [model]) if model in enabled else []  # else refused with the grid's keys
    per_loop = sum(loop_fits(config, spec) for spec in specs) or 1
    sampled = ", sweep.random_samples" if s.random_samples else ""
    factors = (f"({n_settings:,} settings (sweep.params{sampled}) × {s.repeats} repeats (sweep.repeats)"
               f"{' + the refit' if s.test else ''}) × {per_loop} fit{'s' * (per_loop > 1)}{_held_out(config, specs)}")
    passes, heaviest, most = 0, "", 0
    for setting in settings or ():
        total, key, passes_of_one = _passes(setting, fit_order(setting, [model]), s.repeats)
        passes += total
        if passes_of_one > most:
            heaviest, most = key, passes_of_one
    if settings and s.test:  # the refit: at most the heaviest setting's fits, at least the lightest's
        passes += min(_passes(setting, fit_order(setting, [model]), 1)[0] for setting in settings)
    return Work(loops * per_loop, factors, "set sweep.random_samples, fewer values or fewer sweep.repeats",
                passes, heaviest)


def check_work(config, work: Work, command: str) -> None:
    """Refuse, in one line naming the keys that multiply it, a command whose ``work`` exceeds engine.max_fits
    or engine.max_total_passes (before any fit; the fits alone before any data is read)."""
    engine = config.engine
    if work.fits > engine.max_fits:
        raise MlnbError(f"{command}: {work.factors} = {work.fits:,} model fits, more than engine.max_fits = "
                        f"{engine.max_fits:,}; {work.remedy}, or raise engine.max_fits")
    if work.passes > engine.max_total_passes:
        heaviest = f" ({work.heaviest} the most per fit)" if work.heaviest else ""
        lower = f"lower {work.heaviest.split(' = ')[0]}, " if work.heaviest else ""
        raise MlnbError(f"{command}: {work.fits:,} model fits ({work.factors}) make at least {work.passes:,} passes "
                        f"over their training documents{heaviest}, more than engine.max_total_passes = "
                        f"{engine.max_total_passes:,}; {lower}{work.remedy}, or raise engine.max_total_passes")
