"""The numpy kernels: the reference implementation, and the fallback where numba cannot load."""
