"""Stepping a model: settings, the substep loop, the rigid-body part of a step."""
