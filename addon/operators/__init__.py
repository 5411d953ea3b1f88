"""Operators: bake and free bake (``operators.bake``), and adding bodies, connectors, springs and
motors from the selection (``operators.add``)."""

from . import add, bake

classes = bake.classes + add.classes
