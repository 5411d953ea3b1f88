"""Every engine test runs on the compiled kernels (numba); most also on the numpy reference.

The reference gives the same numbers as the compiled kernels: the kernel tests (test_kernels*.py
and the other ``*_kernels_agree`` tests) compare each kernel on random inputs, and
test_backends_agree.py steps whole scenes with every kind of part on both. So a test that takes
long on the reference (it runs 10 to 300 times slower) is marked ``compiled_only`` and runs on
numba alone, and a test that compares the backends itself (``compares_backends``) runs once.
Where numba cannot load, everything runs on the reference.

JAKOBSEN_TEST_BACKENDS=numba (or numpy) runs one backend; JAKOBSEN_TEST_REFERENCE=all runs the
``compiled_only`` tests on the reference too (do that after changing a numpy kernel; the CI run
before this split, every engine test on both backends, took 83 minutes)."""

import os

import pytest

from jakobsen_engine import backend

CHOSEN = tuple(name for name in os.environ.get("JAKOBSEN_TEST_BACKENDS", ",".join(backend.NAMES)).split(",") if name)
if not CHOSEN or set(CHOSEN) - set(backend.NAMES):
    raise pytest.UsageError(f"JAKOBSEN_TEST_BACKENDS: choose from {', '.join(backend.NAMES)}, got {CHOSEN}")
REFERENCE_RUNS_ALL = os.environ.get("JAKOBSEN_TEST_REFERENCE", "") == "all"


@pytest.fixture(autouse=True, params=CHOSEN)
def kernel_backend(request):
    """The backend that SolverSettings(backend="auto") selects during the test."""
    if request.param == "numba" and backend.numba_problem():
        pytest.skip(f"numba cannot load here: {backend.numba_problem()}")
    with backend.use(request.param):
        yield request.param


def _left_to_the_compiled_kernels(item) -> bool:
    callspec = getattr(item, "callspec", None)
    if callspec is None or callspec.params.get("kernel_backend") != "numpy":
        return False
    compiled_runs = "numba" in CHOSEN and backend.numba_problem() is None
    if item.get_closest_marker("compares_backends") is not None:
        return compiled_runs  # it runs once, under the numba parameter
    if item.get_closest_marker("compiled_only") is not None:
        return compiled_runs and not REFERENCE_RUNS_ALL
    return False


def pytest_collection_modifyitems(config, items):
    left = [item for item in items if _left_to_the_compiled_kernels(item)]
    if left:
        chosen = set(map(id, left))
        items[:] = [item for item in items if id(item) not in chosen]
        config.hook.pytest_deselected(items=left)


def pytest_report_header(config):
    return (f"kernel backends: {', '.join(CHOSEN)}; compiled_only tests "
            f"{'also' if REFERENCE_RUNS_ALL else 'not'} on the numpy reference")
