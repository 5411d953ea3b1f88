"""Rigid bodies: mass properties, collision shapes and sample points, Jakobsen's cluster."""
