"""Panels: the Physics tab (``ui.physics``), the Scene tab (``ui.scene``) and the 3D View's
sidebar tab "Jakobsen" (``ui.sidebar``)."""

from . import physics, scene, sidebar

classes = physics.classes + scene.classes + sidebar.classes
