"""Operators: bake and free bake (``operators.bake``), adding bodies, connectors, springs and
motors from the selection (``operators.add``), and vehicles: Create Vehicle and Hitch Trailer
(``operators.vehicle``)."""

from . import add, bake, vehicle

classes = bake.classes + add.classes + vehicle.classes
