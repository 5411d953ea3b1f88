"""Connectors, springs and motors between rigid bodies (the Cinema 4D set)."""
