"""Surface kernels: the volume a closed cloth keeps (pressure)."""
