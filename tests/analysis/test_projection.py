"""C2: the 2-D map of token vectors (PCA by SVD) in llmviz.analysis.projection."""

import numpy as np

from llmviz.analysis.projection import pca_2d


def test_points_on_a_line_keep_all_their_variance_on_the_first_axis():
    direction = np.array([3.0, 0.0, 4.0, 0.0, 0.0]) / 5  # unit vector in 5-D
    t = np.array([-2.0, -1.0, 0.5, 1.0, 1.5])
    x = 7.0 + t[:, None] * direction  # [5, 5]
    p = pca_2d(x)
    assert p.coords.shape == (5, 2) and p.explained.shape == (2,)
    assert np.isclose(p.explained[0], 1.0) and np.isclose(p.explained[1], 0.0, atol=1e-12)
    assert np.allclose(p.coords[:, 0], t - t.mean())  # the largest loading (dim 2, 0.8) is made positive
    assert np.allclose(p.coords[:, 1], 0.0, atol=1e-9)
    assert np.allclose(p.components[0], direction)


def test_matches_the_covariance_eigenvectors():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(12, 6)) * np.array([5.0, 3.0, 1.0, 0.5, 0.2, 0.1])  # [n, d]
    p = pca_2d(x)
    eigvals, eigvecs = np.linalg.eigh(np.cov(x, rowvar=False))  # ascending
    assert np.allclose(p.explained, eigvals[::-1][:2] / eigvals.sum())
    for i in range(2):
        assert np.isclose(abs(p.components[i] @ eigvecs[:, -1 - i]), 1.0)
    assert np.allclose(p.coords, (x - x.mean(0)) @ p.components.T)


def test_signs_do_not_depend_on_the_svd():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(8, 4))
    a, b = pca_2d(x), pca_2d(x[::-1])  # same points, other order
    assert np.allclose(a.components, b.components)
    for comp in a.components:
        assert comp[np.abs(comp).argmax()] > 0


def test_degenerate_inputs_give_zeros():
    assert np.all(pca_2d(np.ones((1, 4))).coords == 0)
    same = pca_2d(np.ones((3, 4)))
    assert np.all(same.coords == 0) and np.all(same.explained == 0)
    two = pca_2d(np.array([[0.0, 0.0], [2.0, 0.0]]))  # 2 points: one direction only
    assert np.allclose(two.coords, [[-1.0, 0.0], [1.0, 0.0]]) and np.isclose(two.explained.sum(), 1.0)
