"""Shapes and meshes: quaternions, triangulation and mass properties, convex hulls, collider shapes."""
