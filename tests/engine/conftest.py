"""Every engine test runs on both kernel backends: numba (compiled) and numpy (the reference)."""

import pytest

from jakobsen_engine import backend


@pytest.fixture(autouse=True, params=backend.NAMES)
def kernel_backend(request):
    """The backend that SolverSettings(backend="auto") selects during the test."""
    if request.param == "numba" and backend.numba_problem():
        pytest.skip(f"numba cannot load here: {backend.numba_problem()}")
    with backend.use(request.param):
        yield request.param
