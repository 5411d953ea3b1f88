"""Force-field kernels (to be written): the fields evaluated at many particles."""
