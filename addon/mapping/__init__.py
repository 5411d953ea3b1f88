"""Blender objects, family by family, as the engine's cloth, bodies, colliders, connectors and fields."""
