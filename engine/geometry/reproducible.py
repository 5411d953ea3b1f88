"""numpy routines whose bits do not depend on the numpy release, for the numpy-side code both
backends share (the rigid solver's, the connectors', the vehicles'): a bake must not change in its
last bits between numpy 1.26 (Blender 4.x) and numpy 2.x (Blender 5.x).

Only + - * /, sqrt (correctly rounded) and sin and cos (numpy takes them from the C library) give
the same bits in every numpy. Not so:

- np.arctan2, np.exp, np.expm1, np.arccos (and tan, log, arcsin, power...): numpy's own SIMD loops
  (Intel's SVML on AVX-512 machines) are accurate to a few ulp but round differently from one
  release to the next: numpy 1.26 and 2.5 disagreed in the last bit of np.arctan2 for a third of
  random arguments, which moved a box's first friction anchor (``RigidStepper.find_contacts``,
  through ``quaternions.log_rotation``) by an ulp and the whole bake with it. Here they are the C
  library's (Python's ``math``), the same for every numpy on a machine and what the compiled
  kernels (``backend/numba``) call.
- ``@``, np.dot, np.linalg.*: the BLAS and LAPACK numpy is built with (OpenBLAS, another version
  in each numpy's wheels): np.linalg.lstsq gave another last bit for the same 3 x 3 system.
  Here: sums of products added in order, and a pivoted Cholesky.

arctan2 is hot (the fast-body sweep, every substep): where numba imports it is a compiled loop
over the same C atan2 (``backend/numba/elementwise.py``, the same bits), else the Python loop.
"""

from __future__ import annotations

import math

import numpy as np


def _exp(v: float) -> float:
    try:
        return math.exp(v)
    except OverflowError:
        return math.inf


def _expm1(v: float) -> float:
    try:
        return math.expm1(v)
    except OverflowError:
        return math.inf


def _acos(v: float) -> float:
    return math.acos(v) if -1.0 <= v <= 1.0 else math.nan


def _map(f, *args) -> np.ndarray:
    arrays = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in args))
    shape = arrays[0].shape
    values = map(f, *(a.ravel().tolist() for a in arrays))
    return np.fromiter(values, np.float64, count=arrays[0].size).reshape(shape)


def _compiled_atan2():
    """The compiled loop (``backend/numba/elementwise.atan2_into``), or None where numba does not
    load (then the Python loop, which gives the same bits). Looked up once, at the first call (so
    importing the engine does not import numba)."""
    global _atan2_into
    if _atan2_into is None:
        try:
            from ..backend.numba.elementwise import atan2_into
        except Exception:  # ImportError, or numba/llvmlite broken in this Python
            atan2_into = False
        _atan2_into = atan2_into
    return _atan2_into or None


_atan2_into = None


def arctan2_python(y, x) -> np.ndarray:
    """np.arctan2(y, x) by math.atan2, element by element, in Python (the fallback)."""
    return _map(math.atan2, y, x)


def arctan2(y, x) -> np.ndarray:
    """np.arctan2(y, x) by math.atan2 (the C library's atan2), element by element."""
    compiled = _compiled_atan2()
    if compiled is None:
        return arctan2_python(y, x)
    yb, xb = np.broadcast_arrays(np.asarray(y, dtype=np.float64), np.asarray(x, dtype=np.float64))
    out = np.empty(yb.shape)
    compiled(np.ascontiguousarray(yb).ravel(), np.ascontiguousarray(xb).ravel(), out.reshape(-1))
    return out


def exp(v) -> np.ndarray:
    """np.exp(v) by math.exp (inf past its range)."""
    return _map(_exp, v)


def expm1(v) -> np.ndarray:
    """np.expm1(v) by math.expm1 (inf past its range)."""
    return _map(_expm1, v)


def arccos(v) -> np.ndarray:
    """np.arccos(v) by math.acos (nan outside [-1, 1])."""
    return _map(_acos, v)


def matmul(a, b) -> np.ndarray:
    """a @ b (numpy's broadcasting rules: (k,) vectors, (..., m, k) @ (..., k, n) stacks), the k
    products added in order (no BLAS)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    out = a2[..., :, 0, None] * b2[..., None, 0, :]
    for i in range(1, a2.shape[-1]):
        out = out + a2[..., :, i, None] * b2[..., None, i, :]
    if a.ndim == 1:
        out = out[..., 0, :]
    return out[..., 0] if b.ndim == 1 else out


def rotation_polar(m) -> np.ndarray:
    """The nearest rotations (..., 3, 3) to matrices m (..., 3, 3) of positive determinant (the
    polar factor, as U V^T of an SVD, without LAPACK): Newton's iteration R <- (R + R^-T) / 2, the
    inverse transposes from cross products of the columns, until it stops changing (quadratic
    near a rotation: a float32 matrix takes three steps)."""
    r = np.array(m, dtype=np.float64)
    for _ in range(100):
        c0, c1, c2 = r[..., :, 0], r[..., :, 1], r[..., :, 2]
        x0, x1, x2 = _cross(c1, c2), _cross(c2, c0), _cross(c0, c1)
        det = (c0[..., 0] * x0[..., 0] + c0[..., 1] * x0[..., 1] + c0[..., 2] * x0[..., 2])[..., None, None]
        step = 0.5 * (r + np.stack([x0, x1, x2], axis=-1) / det)
        done = not np.any(np.abs(step - r) > 1e-15)
        r = step
        if done:
            break
    return r


def symmetric_eigen3(m) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (3,) ascending and eigenvectors (3, 3, columns) of a symmetric 3x3 matrix, by
    cyclic Jacobi rotations in Python floats (numpy's eigh calls the LAPACK its release ships,
    whose last bits differ between numpy 1.26 and 2.x; a body's principal axes set everything
    built on it). Converged when the off-diagonal part is below 1e-16 of the diagonal's."""
    a = [[float(m[i][j]) for j in range(3)] for i in range(3)]
    v = [[1.0 if i == j else 0.0 for j in range(3)] for i in range(3)]
    for _ in range(64):
        off = abs(a[0][1]) + abs(a[0][2]) + abs(a[1][2])
        if off <= 1e-16 * (abs(a[0][0]) + abs(a[1][1]) + abs(a[2][2])) or off == 0.0:
            break
        for p, q in ((0, 1), (0, 2), (1, 2)):
            if a[p][q] == 0.0:
                continue
            theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q])
            t = math.copysign(1.0, theta) / (abs(theta) + math.sqrt(theta * theta + 1.0))
            c = 1.0 / math.sqrt(t * t + 1.0)
            s = t * c
            for k in range(3):
                akp, akq = a[k][p], a[k][q]
                a[k][p], a[k][q] = c * akp - s * akq, s * akp + c * akq
            for k in range(3):
                apk, aqk = a[p][k], a[q][k]
                a[p][k], a[q][k] = c * apk - s * aqk, s * apk + c * aqk
            for k in range(3):
                vkp, vkq = v[k][p], v[k][q]
                v[k][p], v[k][q] = c * vkp - s * vkq, s * vkp + c * vkq
    values = np.array([a[0][0], a[1][1], a[2][2]])
    order = np.argsort(values, kind="stable")
    return values[order], np.array(v)[:, order]


def _cross(a, b):
    return np.stack([a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1], a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
                     a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]], axis=-1)


def _cholesky(g):
    """The lower Cholesky factor of a symmetric positive definite g (r, r)."""
    r = len(g)
    L = np.zeros((r, r))
    work = g.copy()
    for k in range(r):
        d = math.sqrt(max(work[k, k], 1e-300))
        L[k, k] = d
        L[k + 1:, k] = work[k + 1:, k] / d
        col = L[k + 1:, k]
        work[k + 1:, k + 1:] = work[k + 1:, k + 1:] - col[:, None] * col[None, :]
    return L


def _solve_lower(L, v, transposed=False):
    """L^-1 v (or L^-T v) for lower triangular L (r, r) and v (r,), term by term in order."""
    r = len(v)
    out = np.zeros(r)
    order = range(r - 1, -1, -1) if transposed else range(r)
    for i in order:
        s = v[i]
        js = range(i + 1, r) if transposed else range(i)
        for j in js:
            s = s - (L[j, i] if transposed else L[i, j]) * out[j]
        out[i] = s / L[i, i]
    return out


def psd_lstsq(k, b, rcond: float = 1e-10) -> np.ndarray:
    """The minimum-norm least-squares solution of k x = b for a symmetric positive semidefinite
    k (n, n) (as np.linalg.lstsq(k, b, rcond)[0], without LAPACK): k = L L^T by a Cholesky with
    diagonal pivoting, stopped at pivots below rcond times the largest diagonal (L (n, r) of full
    rank), and x = k^+ b = L (L^T L)^-2 L^T b."""
    k = np.array(k, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    n = len(k)
    if not n:
        return np.zeros(0)
    work = k.copy()
    scale = float(np.max(np.diag(k)))
    cols = []
    if scale > 0.0:
        for _ in range(n):
            diag = np.diag(work)
            p = int(np.argmax(diag))
            if not diag[p] > rcond * scale:
                break
            col = work[:, p] / math.sqrt(diag[p])
            cols.append(col)
            work = work - col[:, None] * col[None, :]
    if not cols:
        return np.zeros(n)
    L = np.stack(cols, axis=1)
    g = matmul(L.T, L)
    lower = _cholesky(g)
    y = matmul(L.T, b)
    for _ in range(2):  # (L^T L)^-1 twice
        y = _solve_lower(lower, _solve_lower(lower, y), transposed=True)
    return matmul(L, y)
