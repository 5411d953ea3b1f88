"""Particles and cloth: cloth topology from polygons."""
