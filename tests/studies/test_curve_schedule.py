"""curve.schedule = "fixed_updates": a model whose kind declares a schedule (the minibatch kinds) makes at every
training size as many updates as its full-size fit; the others keep their options."""

from mlnb.config import load_config
from mlnb.models import get_kind
from mlnb.studies.curve import scheduled


def test_a_minibatch_model_keeps_its_updates_and_naive_bayes_its_options():
    config = load_config("configs/four_models.toml", ["curve.schedule='fixed_updates'", "curve.max_passes=200",
                                                      "models.lr.batch_size=1000", "models.lr.npasses=2",
                                                      "models.nblr.batch_size=300", "models.nblr.npasses=3"])
    sized = scheduled(config, 100, 20_000)
    # LR: U = 2·⌈20000/1000⌉ = 40 updates; B′ = min(1000, max(10, ⌈100/10⌉)) = 10; npasses′ = ⌈40/⌈100/10⌉⌉ = 4
    assert (sized.models["lr"].options.batch_size, sized.models["lr"].options.npasses) == (10, 4)
    # NB-LR: U = 3·⌈20000/300⌉ = 201; B′ = 10; npasses′ = min(200, ⌈201/10⌉) = 21
    assert (sized.models["nblr"].options.batch_size, sized.models["nblr"].options.npasses) == (10, 21)
    assert sized.models["mnb"].options == config.models["mnb"].options
    assert get_kind("naive_bayes").schedule is None and get_kind("naive_bayes").schedule_of(
        config.models["mnb"].options) == {}
    # the full size, or curve.schedule = "as_config": the config's own options
    assert scheduled(config, 20_000, 20_000) is config
    as_config = load_config("configs/four_models.toml", ["curve.schedule='as_config'"])
    assert scheduled(as_config, 100, 20_000) is as_config


def test_the_most_passes_a_small_sample_gets_is_curve_max_passes():
    config = load_config("configs/four_models.toml", ["curve.schedule='fixed_updates'", "curve.max_passes=7",
                                                      "models.lr.batch_size=10", "models.lr.npasses=50"])
    assert scheduled(config, 100, 20_000).models["lr"].options.npasses == 7  # ⌈50·2000 / 10⌉ = 10,000 capped
