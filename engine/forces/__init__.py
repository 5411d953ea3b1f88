"""Force fields (wind, drag, attractors) and Follow Position / Rotation."""
