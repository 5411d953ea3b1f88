"""``geometry.reproducible``'s element-by-element math, compiled: a loop over ``math.atan2``, which
numba lowers to a call of the C library's atan2 (the function Python's ``math.atan2`` calls, and
the compiled kernels), so the bits are those of the pure-Python loop it replaces, at a fraction of
its cost (the fast-body sweep takes the rotation vectors of all bodies, up to three times a
substep: 1,001 quaternions cost ~79 us through ``math.atan2`` one by one).

Not one of the backend's kernel modules: ``reproducible`` loads it where numba imports, whichever
backend steps (it is the same arithmetic either way), and keeps its Python loop where numba cannot.
"""

from __future__ import annotations

import math

from numba import njit


@njit(cache=True, nogil=True)
def atan2_into(y, x, out):
    """out[i] = atan2(y[i], x[i]) for flat float64 arrays."""
    for i in range(out.shape[0]):
        out[i] = math.atan2(y[i], x[i])
