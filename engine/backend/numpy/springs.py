"""Springs, the numpy reference: ``constraints.springs.apply_springs`` itself (vectorised over the
weak springs, one after another for the others). ``backend/numba/springs.py`` is compiled."""

from ...constraints.springs import apply_springs

__all__ = ["apply_springs"]
