"""Panels: the Physics tab (``ui.physics``), the Scene tab (``ui.scene``), the 3D View's sidebar
tab "Jakobsen" (``ui.sidebar``), the Vehicle panels in both (``ui.vehicle``) and the viewport
overlay of axes (``ui.overlay``)."""

from . import overlay, physics, scene, sidebar, vehicle

# Parents before their sub-panels; the sidebar's panels in the order they stand in its tab.
classes = physics.classes + vehicle.physics_classes + scene.classes + sidebar.classes + vehicle.sidebar_classes


def register() -> None:
    """What the panels need besides their classes: the viewport overlay (its handler only where
    there is a GPU) and its toggle."""
    overlay.register()


def unregister() -> None:
    overlay.unregister()
