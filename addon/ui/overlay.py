"""The viewport overlay: which way every connector, motor, spring and vehicle points.

A ``SpaceView3D`` draw handler (``POST_VIEW``, Blender's ``gpu`` module, the built-in
``POLYLINE_UNIFORM_COLOR`` shader) draws, for every enabled Empty of the view layer:
- a connector's Z (blue) and X (red) axes and its limits (white): a slider's or twist slider's
  Linear Limit (the range along Z, with end ticks), a hinge's or twist slider's Angular Limit (an
  arc about Z from X), a ragdoll's cone and twist range, a cardan's Cone Limit, the plane a planar
  connector keeps to, a box connector's box, a wheel suspension's travel along Z;
- a motor's axis (yellow), with an arc arrow round it showing which way a positive speed turns
  (right-handed) or, for a linear motor, an arrowhead along it;
- a spring as a line between the points it holds (green);
and for a vehicle's chassis an arrow along its Forward axis (cyan) and each wheel's axle (the X
of its Wheel Suspension, orange) through the wheel.

The geometry (``overlay_lines``) is plain data read from Blender objects, testable headless; only
``_draw`` touches the GPU. Headless Blender (``bpy.app.background``) has no GPU: there the handler
is not added. The toggle is ``WindowManager.jakobsen_show_axes`` ("Show Axes" in the sidebar), a
setting of the session, not of the file.
"""

from __future__ import annotations

import math
from typing import TypedDict

import bpy
import numpy as np
from bpy.props import BoolProperty

from ..blender_io.reads import takes_part
from ..properties import EMPTY_TYPES
from ..registered import add_property, remove_property
from ..translate.wheels import axis_vector
from .vehicle import is_chassis, wheel_chassis

COLOURS = {
    "x": (0.95, 0.25, 0.25, 1.0),
    "z": (0.35, 0.55, 1.0, 1.0),
    "limit": (0.95, 0.95, 0.95, 1.0),
    "motor": (1.0, 0.8, 0.1, 1.0),
    "spring": (0.3, 0.95, 0.4, 1.0),
    "forward": (0.2, 0.95, 0.95, 1.0),
    "axle": (1.0, 0.55, 0.1, 1.0),
}
LINE_WIDTH = 2.0
ARC_SEGMENTS = 24



class _DrawState(TypedDict):
    draws: int  # batches the last draw drew
    errors: list[str]  # the first few errors a draw met


_handler = None
_state: _DrawState = {"draws": 0, "errors": []}


# -- the geometry: line segments per colour ---------------------------------------------------------

class Lines:
    """Line segments (pairs of world points) by colour name."""

    def __init__(self) -> None:
        self.by_colour: dict[str, list] = {}

    def add(self, colour: str, a, b) -> None:
        self.by_colour.setdefault(colour, []).extend((tuple(map(float, a)), tuple(map(float, b))))

    def polyline(self, colour: str, points) -> None:
        for a, b in zip(points[:-1], points[1:]):
            self.add(colour, a, b)

    def arrow(self, colour: str, start, end, side) -> None:
        """A line from start to end with a head at end, its barbs in the plane of ``side``."""
        start, end, side = (np.asarray(v, float) for v in (start, end, side))
        self.add(colour, start, end)
        d = end - start
        length = float(np.linalg.norm(d))
        if length <= 0.0:
            return
        back, across = d / length * 0.18 * length, side / max(np.linalg.norm(side), 1e-12) * 0.09 * length
        self.add(colour, end, end - back + across)
        self.add(colour, end, end - back - across)

    def segments(self, colour: str) -> np.ndarray:
        return np.array(self.by_colour.get(colour, ()), dtype=float).reshape(-1, 2, 3)


def _frame(obj):
    """(origin, unit X, Y, Z, length): the Empty's world frame and the size it is drawn at."""
    m = np.array(obj.matrix_world, dtype=float)
    axes = m[:3, :3]
    lengths = np.linalg.norm(axes, axis=0)
    unit = axes / np.where(lengths > 1e-12, lengths, 1.0)
    size = float(obj.empty_display_size) * float(lengths.max()) if obj.type == 'EMPTY' else float(lengths.max())
    return m[:3, 3], unit[:, 0], unit[:, 1], unit[:, 2], max(size, 1e-3)


def _arc(centre, u, v, radius: float, start: float, end: float) -> list:
    angles = np.linspace(start, end, max(2, int(ARC_SEGMENTS * abs(end - start) / (2 * math.pi)) + 2))
    return [centre + radius * (math.cos(a) * u + math.sin(a) * v) for a in angles]


def _angle_arc(lines: Lines, o, x, y, radius: float, low: float, high: float) -> None:
    """An angular range about Z from X (a hinge's, a twist's): the arc and the two radii that end it."""
    arc = _arc(o, x, y, radius, low, high)
    lines.polyline("limit", arc)
    lines.add("limit", o, arc[0])
    lines.add("limit", o, arc[-1])


def _range(lines: Lines, o, axis, low: float, high: float, tick) -> None:
    """A linear range along ``axis`` (in metres, as the panel's), with ticks across its ends."""
    lo, hi = o + low * axis, o + high * axis
    lines.add("limit", lo, hi)
    for end in (lo, hi):
        lines.add("limit", end - tick, end + tick)


def _cone(lines: Lines, o, x, y, z, length: float, angle: float) -> None:
    """The cone of directions within ``angle`` of Z: its rim, ``length`` from the apex, and four of
    its sides. Past 90 degrees it opens backwards, as the limit does."""
    centre, radius = o + length * math.cos(angle) * z, length * math.sin(angle)
    rim = _arc(centre, x, y, radius, 0.0, 2.0 * math.pi)
    lines.polyline("limit", rim)
    for side in (x, y, -x, -y):
        lines.add("limit", o, centre + radius * side)


def _box(lines: Lines, o, x, y, z, lower, upper) -> None:
    """The box the Box connector's origin may move in: its twelve edges."""
    axes = (x, y, z)
    # Corner k takes the upper bound along axis i where bit i of k is set; an edge joins two corners
    # that differ in one bit.
    corner = [o + sum((upper if (k >> i) & 1 else lower)[i] * axes[i] for i in range(3)) for k in range(8)]
    for k in range(8):
        for i in range(3):
            if not (k >> i) & 1:
                lines.add("limit", corner[k], corner[k | (1 << i)])


def _connector(lines: Lines, obj) -> None:
    c = obj.jakobsen.connector
    o, x, y, z, size = _frame(obj)
    lines.arrow("z", o, o + size * z, x)
    lines.arrow("x", o, o + size * x, z)
    kind = c.connector_type
    if kind in ('SLIDER', 'TWIST_SLIDER') and c.use_linear_limit:
        _range(lines, o, z, c.distance_min, c.distance_max, 0.25 * size * x)
    if kind in ('HINGE', 'TWIST_SLIDER') and c.use_angular_limit:
        _angle_arc(lines, o, x, y, 0.6 * size, c.angle_min, c.angle_max)
    if kind == 'RAGDOLL' or (kind == 'CARDAN' and c.use_cone_limit):
        _cone(lines, o, x, y, z, 0.8 * size, c.cone_angle)
    if kind == 'RAGDOLL':
        _angle_arc(lines, o, x, y, 0.45 * size, -c.twist_angle, c.twist_angle)
    elif kind == 'PLANAR':
        # The plane it moves in: a square in the Empty's XY.
        half = 0.6 * size
        square = [o + half * (sx * x + sy * y) for sx, sy in ((1, 1), (-1, 1), (-1, -1), (1, -1), (1, 1))]
        lines.polyline("limit", square)
    elif kind == 'BOX':
        _box(lines, o, x, y, z, tuple(c.box_lower), tuple(c.box_upper))
    elif kind == 'WHEEL_SUSPENSION' and wheel_chassis(obj) is None:
        _range(lines, o, z, c.suspension_lower, c.suspension_upper, 0.2 * size * y)


def _motor(lines: Lines, obj) -> None:
    m = obj.jakobsen.motor
    o, x, y, z, size = _frame(obj)
    if m.motor_type == 'LINEAR':
        lines.arrow("motor", o, o + 1.2 * size * z, x)
        return
    lines.add("motor", o - 0.4 * size * z, o + 1.2 * size * z)
    # Positive speed turns right-handed about +Z: from X towards Y. The arc and its head show it.
    centre, radius = o + 0.9 * size * z, 0.35 * size
    arc = _arc(centre, x, y, radius, 0.0, 1.5 * math.pi)
    lines.polyline("motor", arc)
    end, tangent = arc[-1], x  # at 270 degrees the turning direction is +X
    radial = (end - centre) / radius
    lines.add("motor", end, end - 0.3 * radius * tangent + 0.25 * radius * radial)
    lines.add("motor", end, end - 0.3 * radius * tangent - 0.25 * radius * radial)


def _spring(lines: Lines, obj) -> None:
    here = np.array(obj.matrix_world.translation)
    ends = [here if other is None else np.array(other.matrix_world.translation) for other in obj.jakobsen.pair()]
    lines.add("spring", ends[0], ends[1])


def _vehicle(lines: Lines, chassis, wheels) -> None:
    m = np.array(chassis.matrix_world, dtype=float)
    corners = np.array([tuple(c) for c in chassis.bound_box], dtype=float)
    centre = m[:3, :3] @ corners.mean(axis=0) + m[:3, 3]
    span = float(np.linalg.norm(m[:3, :3] @ (corners.max(axis=0) - corners.min(axis=0))))
    forward = axis_vector(m, chassis.jakobsen.vehicle.forward_axis)
    up = m[:3, 2] / max(np.linalg.norm(m[:3, 2]), 1e-12)
    top = centre + up * 0.5 * float(np.abs(m[:3, :3] @ (corners.max(axis=0) - corners.min(axis=0))) @ np.abs(up))
    lines.arrow("forward", top, top + 0.6 * span * forward, up)
    for connector in wheels:
        o, x, _, _, _ = _frame(connector)
        wheel = connector.jakobsen.connector.object_b
        half = 0.6 * float(max(wheel.dimensions)) if wheel is not None else 0.5
        lines.add("axle", o - half * x, o + half * x)


def overlay_lines(objects) -> Lines:
    """What the overlay draws for ``objects`` (a view layer's objects)."""
    lines = Lines()
    wheels: dict[str, list] = {}
    chassis = []
    for obj in objects:
        if not takes_part(obj):
            continue
        role = obj.jakobsen.type
        if obj.type == 'EMPTY' and role in EMPTY_TYPES:
            if role == 'CONNECTOR':
                _connector(lines, obj)
                owner = wheel_chassis(obj)
                if owner is not None:
                    wheels.setdefault(owner.name, []).append(obj)
            elif role == 'MOTOR':
                _motor(lines, obj)
            else:
                _spring(lines, obj)
        elif is_chassis(obj):
            chassis.append(obj)
    for obj in chassis:
        _vehicle(lines, obj, wheels.get(obj.name, []))
    return lines


# -- drawing --------------------------------------------------------------------------------------

def _draw() -> None:
    context = bpy.context
    wm = context.window_manager
    if not getattr(wm, "jakobsen_show_axes", False) or context.view_layer is None:
        return
    space = context.space_data
    overlay = getattr(space, "overlay", None)  # a SpaceView3D's (None without a space)
    if overlay is not None and not overlay.show_overlays:
        return
    try:
        import gpu
        from gpu_extras.batch import batch_for_shader

        lines = overlay_lines(context.view_layer.objects)
        shader = gpu.shader.from_builtin('POLYLINE_UNIFORM_COLOR')
        gpu.state.blend_set('ALPHA')
        gpu.state.depth_test_set('NONE')  # seen through the wheels and the bodies they are in
        shader.uniform_float("viewportSize", gpu.state.viewport_get()[2:])
        shader.uniform_float("lineWidth", LINE_WIDTH)
        count = 0
        for colour, points in lines.by_colour.items():
            if not points:
                continue
            shader.uniform_float("color", COLOURS[colour])
            batch_for_shader(shader, 'LINES', {"pos": points}).draw(shader)
            count += 1
        gpu.state.blend_set('NONE')
        _state["draws"] = count
    except Exception as error:  # noqa: BLE001 - a drawing error must not break the viewport
        if len(_state["errors"]) < 5:
            _state["errors"].append(f"{type(error).__name__}: {error}")


def is_registered() -> bool:
    return _handler is not None


def last_draw_count() -> int:
    """How many batches (colours) the last draw drew (for the GUI check)."""
    return int(_state["draws"])


def errors() -> list[str]:
    return list(_state["errors"])


def _redraw(self, context) -> None:
    for window in getattr(context.window_manager, "windows", ()):
        for area in window.screen.areas:
            if area.type == 'VIEW_3D':
                area.tag_redraw()


def register() -> None:
    global _handler
    add_property(bpy.types.WindowManager, "jakobsen_show_axes", BoolProperty(
        name="Show Axes", default=True, update=_redraw,
        description="Draw the axes of connectors and motors (which way each turns), springs, the "
                    "connectors' limits (ranges, arcs, cones, boxes), and each vehicle's forward direction and "
                    "wheel axles in the 3D View"))
    if not bpy.app.background and _handler is None:  # headless Blender has no GPU to draw with
        _handler = bpy.types.SpaceView3D.draw_handler_add(_draw, (), 'WINDOW', 'POST_VIEW')


def unregister() -> None:
    global _handler
    if _handler is not None:
        bpy.types.SpaceView3D.draw_handler_remove(_handler, 'WINDOW')
        _handler = None
    remove_property(bpy.types.WindowManager, "jakobsen_show_axes")
