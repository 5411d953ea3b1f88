"""Self-collision kernels (to be written): a cloth's vertices against its own triangles."""
