"""Vehicles: a chassis on Wheel Suspension connectors, driven, braked and steered each substep
(``vehicle``: the layout at rest; ``control``: the driver; ``path``: a path to follow)."""
