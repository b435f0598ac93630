"""One colour per model, the same in every plot of a study.

The first two colours keep the classic plot of the RCV1 tutorial (the first
model, Naive Bayes, red; the second, logistic regression, blue); later models
take the other colours of matplotlib's tab10 palette, in config order.
"""

from __future__ import annotations

PALETTE = ("tab:red", "tab:blue", "tab:green", "tab:orange", "tab:purple", "tab:brown", "tab:pink",
           "tab:olive", "tab:cyan", "tab:gray")


def model_colors(names) -> dict[str, str]:
    """name -> colour, in the given order (cycling after ten models)."""
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}
