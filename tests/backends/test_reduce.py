import numpy as np
import pytest

from mlnb.backends import LocalBackend
from mlnb.backends.reduce import tree_reduce


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 8, 11, 16, 17])
def test_tree_reduce_combines_every_value_once_in_order(n):
    shape = tree_reduce([str(i) for i in range(n)], lambda a, b: f"({a}+{b})")
    assert [int(t) for t in shape.replace("(", " ").replace(")", " ").replace("+", " ").split()] == list(range(n))


def test_tree_reduce_is_pairwise_not_left_to_right():
    assert tree_reduce("abcd", lambda a, b: f"({a}{b})") == "((ab)(cd))"
    assert tree_reduce("abcde", lambda a, b: f"({a}{b})") == "(((ab)(cd))e)"


def test_tree_reduce_refuses_nothing():
    with pytest.raises(ValueError, match="nothing to reduce"):
        tree_reduce([], lambda a, b: a + b)


def test_tree_reduce_holds_logarithmically_many_partial_results():
    alive, peak = [0], [0]

    def values():
        for i in range(1000):
            alive[0] += 1
            peak[0] = max(peak[0], alive[0])
            yield np.full(3, float(i))

    def combine(a, b):
        alive[0] -= 1
        return a + b

    assert tree_reduce(values(), combine)[0] == sum(range(1000))
    assert peak[0] <= 11  # log2(1000) + 1


def _square(x, offset):
    return x * x + offset


def test_local_backend_maps_and_reduces():
    with LocalBackend() as backend:
        assert backend.map(_square, [1, 2, 3], 1) == [2, 5, 10]
        assert backend.map_reduce(_square, [1, 2, 3], 0, combine=lambda a, b: a + b) == 14
