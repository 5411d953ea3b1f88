"""Every engine test runs on both kernel backends: numba (compiled) and numpy (the reference).

JAKOBSEN_TEST_BACKENDS=numba (or numpy) runs one of them: ``./run test`` runs both once on
numpy 2 and only the compiled one again on numpy 1.26 (the reference is slow; what it checks
does not depend on the second numpy, and the kernel tests still compare both there)."""

import os

import pytest

from jakobsen_engine import backend

CHOSEN = tuple(name for name in os.environ.get("JAKOBSEN_TEST_BACKENDS", ",".join(backend.NAMES)).split(",") if name)
if not CHOSEN or set(CHOSEN) - set(backend.NAMES):
    raise pytest.UsageError(f"JAKOBSEN_TEST_BACKENDS: choose from {', '.join(backend.NAMES)}, got {CHOSEN}")


@pytest.fixture(autouse=True, params=CHOSEN)
def kernel_backend(request):
    """The backend that SolverSettings(backend="auto") selects during the test."""
    if request.param == "numba" and backend.numba_problem():
        pytest.skip(f"numba cannot load here: {backend.numba_problem()}")
    with backend.use(request.param):
        yield request.param
