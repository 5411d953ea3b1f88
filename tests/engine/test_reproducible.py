"""The numpy-release-independent routines (``geometry.reproducible``) compute what numpy's own do,
over the whole range of their arguments: edge values, infinities, rank-deficient systems and
mirrored or far-from-rotation matrices included."""

from __future__ import annotations

import math

import numpy as np
import pytest

from jakobsen_engine.geometry import reproducible as rp

# The compiled functions against numpy's, whichever backend the solver would pick: run once.
pytestmark = pytest.mark.compares_backends

RNG = np.random.default_rng(20261202)


def test_elementwise_functions_match_numpys_to_an_ulp_or_two():
    y, x = RNG.normal(size=(2, 500)) * np.logspace(-300, 300, 500)
    edges = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, 1e-310])
    y, x = np.concatenate([y, np.repeat(edges, 7)]), np.concatenate([x, np.tile(edges, 7)])
    np.testing.assert_allclose(rp.arctan2(y, x), np.arctan2(y, x), rtol=4e-16, atol=0)
    v = np.concatenate([RNG.uniform(-800, 800, 500), [0.0, -1e-20, 710.0, -750.0, np.inf, -np.inf]])
    with np.errstate(over="ignore"):
        np.testing.assert_allclose(rp.exp(v), np.exp(v), rtol=4e-16)
        np.testing.assert_allclose(rp.expm1(v), np.expm1(v), rtol=4e-16)
    c = np.concatenate([RNG.uniform(-1, 1, 500), [-1.0, 1.0, 0.0]])
    np.testing.assert_allclose(rp.arccos(c), np.arccos(c), rtol=4e-16)
    assert np.isnan(rp.arccos(np.array([1.0 + 1e-12, -2.0]))).all()
    assert rp.arctan2(np.zeros((2, 3, 1)), np.ones((1, 4))).shape == (2, 3, 4)  # numpy's broadcasting


def _atan2_arguments():
    """Random pairs over the whole range, and every pair of the edge values: signed zeros,
    infinities, nan, subnormals, the extremes, either sign."""
    y, x = RNG.normal(size=(2, 20000)) * 10.0 ** RNG.uniform(-320, 308, size=(2, 20000))
    edges = np.array([0.0, 5e-324, 1e-310, 2.2250738585072014e-308, 1e-300, 1e-20, 0.5, 1.0, 3.0, 1e20, 1e300,
                      np.finfo(float).max, np.inf, np.nan])
    edges = np.concatenate([edges, -edges])
    return np.concatenate([y, np.repeat(edges, len(edges))]), np.concatenate([x, np.tile(edges, len(edges))])


def test_compiled_arctan2_is_math_atan2_bit_for_bit():
    """The compiled loop (where numba loads) gives math.atan2's bits for every argument (nan where
    it gives nan), in any shape numpy's broadcasting allows."""
    pytest.importorskip("numba")
    assert rp._compiled_atan2() is not None
    y, x = _atan2_arguments()
    got, want = rp.arctan2(y, x), np.array([math.atan2(a, b) for a, b in zip(y.tolist(), x.tolist())])
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    assert np.array_equal(got[ok].view(np.int64), want[ok].view(np.int64))
    assert np.array_equal(np.signbit(got[ok]), np.signbit(want[ok]))  # (implied; the signed zeros say it)
    grid = rp.arctan2(y[:12].reshape(3, 1, 4), x[:8].reshape(2, 4))
    assert grid.shape == (3, 2, 4)
    assert np.array_equal(grid.view(np.int64), rp.arctan2_python(y[:12].reshape(3, 1, 4), x[:8].reshape(2, 4))
                          .view(np.int64))
    assert rp.arctan2(1.0, -1.0).shape == () and float(rp.arctan2(1.0, -1.0)) == math.atan2(1.0, -1.0)
    assert rp.arctan2(np.zeros(0), np.zeros(0)).shape == (0,)


def test_arctan2_without_numba_is_the_python_loop(monkeypatch):
    """Where numba does not load, arctan2 falls back to math.atan2 one by one (the same bits)."""
    monkeypatch.setattr(rp, "_atan2_into", False)
    assert rp._compiled_atan2() is None
    y, x = _atan2_arguments()
    got = rp.arctan2(y[:500], x[:500])
    want = np.array([math.atan2(a, b) for a, b in zip(y[:500].tolist(), x[:500].tolist())])
    assert np.array_equal(got.view(np.int64), want.view(np.int64))  # (the random pairs: no nan among them)


@pytest.mark.parametrize("shapes", [((3,), (3,)), ((4, 3), (3,)), ((3,), (3, 5)), ((4, 3), (3, 5)),
                                    ((7, 4, 4), (4, 4)), ((4, 4), (7, 4, 4)), ((2, 7, 3, 4), (7, 4, 2))])
def test_matmul_is_numpys_matmul_for_vectors_matrices_and_stacks(shapes):
    a, b = RNG.normal(size=shapes[0]), RNG.normal(size=shapes[1])
    got, want = rp.matmul(a, b), a @ b
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("n,rank", [(3, 3), (6, 6), (6, 4), (12, 5), (9, 1), (5, 0)])
def test_psd_lstsq_is_the_minimum_norm_least_squares_solution(n, rank):
    """As np.linalg.lstsq for symmetric positive semidefinite k, of full rank or not (a box face's
    contact rows repeat each other's), to its accuracy: cond(k)^2 eps (it goes through L^T L), here
    k's condition up to 1e3, as a contact system's (masses and lever arms within a factor of 30)."""
    a = RNG.normal(size=(n, rank)) * np.logspace(0, 1.5, rank)
    k = a @ a.T
    b = RNG.normal(size=n)
    want = np.linalg.lstsq(k, b, rcond=1e-10)[0]
    got = rp.psd_lstsq(k, b, rcond=1e-10)
    scale = np.linalg.norm(want) + 1e-300
    assert np.linalg.norm(got - want) <= 1e-8 * max(scale, 1.0)


@pytest.mark.parametrize("spread", [1e-7, 1e-3, 0.3, 3.0])
def test_rotation_polar_is_the_svds_nearest_rotation(spread):
    """Newton's polar factor against U V^T, from float32-rounded rotations to matrices far from any."""
    q = RNG.normal(size=(200, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    w, x, y, z = q.T
    r = np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
                  2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
                  2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], axis=1).reshape(-1, 3, 3)
    m = r + spread * RNG.normal(size=r.shape)
    m = m[np.linalg.det(m) > 0.0] * RNG.uniform(0.01, 100.0)
    u, _, vt = np.linalg.svd(m)
    got = rp.rotation_polar(m)
    np.testing.assert_allclose(got, u @ vt, atol=1e-9)
    np.testing.assert_allclose(np.linalg.det(got), 1.0, atol=1e-12)


@pytest.mark.parametrize("kind", ["random", "scaled", "diagonal", "two_equal", "all_equal", "near_equal"])
def test_symmetric_eigen3_is_numpys_eigh(kind):
    """Jacobi's eigenvalues and eigenvectors of inertia-like matrices against LAPACK's: the same
    values to 1e-14 of the largest, the vectors orthonormal and each an eigenvector (a body's
    principal axes; where eigenvalues repeat any orthonormal basis of their space will do)."""
    for _ in range(300):
        if kind == "random":
            a = RNG.normal(size=(3, 3))
            m = a @ a.T
        elif kind == "scaled":
            a = RNG.normal(size=(3, 3))
            m = (a @ a.T) * 10.0 ** RNG.uniform(-9, 9)
        elif kind == "diagonal":
            m = np.diag(RNG.uniform(0.01, 5.0, 3))
        else:
            q, _ = np.linalg.qr(RNG.normal(size=(3, 3)))
            values = {"two_equal": [1.0, 1.0, 2.5], "all_equal": [0.7, 0.7, 0.7],
                      "near_equal": [1.0, 1.0 + 1e-12, 3.0]}[kind]
            m = q @ np.diag(values) @ q.T
            m = 0.5 * (m + m.T)
        values, vectors = rp.symmetric_eigen3(m)
        scale = np.abs(np.linalg.eigvalsh(m)).max()
        np.testing.assert_allclose(values, np.linalg.eigvalsh(m), atol=1e-14 * scale, rtol=0)
        assert np.all(np.diff(values) >= 0.0)
        np.testing.assert_allclose(vectors.T @ vectors, np.eye(3), atol=1e-13)
        np.testing.assert_allclose(m @ vectors, vectors * values, atol=1e-13 * scale, rtol=0)
