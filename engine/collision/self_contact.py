"""Self-collision of cloth: its vertices against its own non-adjacent triangles (to be written)."""

from __future__ import annotations

import numpy as np


class SelfContacts:
    """The self-collision of every surface with ``self_collision`` on (see ``Model.surfaces``)."""

    def __init__(self, model, backend) -> None:
        self.model = model
        self.kernels = backend.self_contact

    def begin_frame(self, positions: np.ndarray, previous_positions: np.ndarray, frame_time: float,
                    substeps: int) -> None:
        """Once per frame, before its substeps: the candidate pairs that can touch within it."""

    def solve(self, x: np.ndarray, x_prev: np.ndarray, inverse_masses: np.ndarray) -> None:
        """Once per substep, after the constraint iterations: x_prev holds the positions at the
        start of the substep."""
