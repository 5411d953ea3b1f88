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
of its Wheel Suspension, orange) through the wheel; and, for every cloth and soft body whose Pin
Group holds vertices, a dot (magenta) on each pinned vertex where it is now (the evaluated mesh:
its armature, its bake): a large opaque dot where the weight is 1 (held to the object), a smaller
one, fainter the lower its weight, where it is below 1 (pulled by Pin Stiffness times the weight).

The geometry (``overlay_lines``) is plain data read from Blender objects, testable headless; only
``_draw`` touches the GPU. Blender has no bulk read of vertex-group weights, so a cloth's pin
weights are read once (``vertex_group_weights``) and kept until its mesh or the object's geometry
is edited (a ``depsgraph_update_post`` handler; playing the animation does not edit it), and each
draw reads only the evaluated positions, with one ``foreach_get``. Headless Blender
(``bpy.app.background``) has no GPU: there the handler is not added. The toggle is
``WindowManager.jakobsen_show_axes`` ("Show Axes" in the sidebar), a setting of the session, not
of the file.
"""

from __future__ import annotations

import math
from typing import NamedTuple, TypedDict

import bpy
import numpy as np
from bpy.app.handlers import persistent
from bpy.props import BoolProperty

from ..blender_io.reads import pin_group, takes_part, vertex_group_weights
from ..properties import EMPTY_TYPES
from ..registered import add_property, remove_property
from ..translate.settings import PIN_WEIGHT
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
    "pin": (1.0, 0.25, 0.85, 1.0),
}
LINE_WIDTH = 2.0
ARC_SEGMENTS = 24
# Pins are dots of a fixed size on the screen, as Blender draws vertices, so that they stay
# visible on a cloth of any size and zoom: in pixels, a full pin's and a soft pin's. A soft pin's
# alpha runs from SOFT_PIN_ALPHA (weight near 0) to 1 (weight near 1).
PIN_SIZE = 9.0
SOFT_PIN_SIZE = 6.0
SOFT_PIN_ALPHA = 0.3
DEFORMING = ('CLOTH', 'SOFT_BODY')  # the roles with a Pin Group (obj.jakobsen.cloth.pin_group)


class _DrawState(TypedDict):
    draws: int  # batches the last draw drew
    errors: list[str]  # the first few errors a draw met


_handler = None
_state: _DrawState = {"draws": 0, "errors": []}


# -- the geometry: line segments per colour ---------------------------------------------------------

class Pins(NamedTuple):
    """The pinned vertices of one cloth or soft body."""
    name: str  # the object's
    points: np.ndarray  # (k, 3) where they are, in world space
    weights: np.ndarray  # (k,) their weights in the Pin Group, all above 0


class Lines:
    """Line segments (pairs of world points) by colour name, and the pinned vertices."""

    def __init__(self) -> None:
        self.by_colour: dict[str, list] = {}
        self.pins: list[Pins] = []

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

    def pin_dots(self) -> list[tuple[float, np.ndarray, np.ndarray]]:
        """What the pins are drawn as: (size in pixels, (k, 3) points, (k, 4) colours) for the full
        pins (weight 1: opaque, PIN_SIZE) and for the soft ones (smaller, alpha by weight)."""
        if not self.pins:
            return []
        points = np.concatenate([p.points for p in self.pins])
        weights = np.concatenate([p.weights for p in self.pins])
        full = weights >= PIN_WEIGHT  # as the engine tells a pinned vertex from a pulled one
        colours = np.tile(np.array(COLOURS["pin"], dtype=float), (len(weights), 1))
        colours[~full, 3] = SOFT_PIN_ALPHA + (1.0 - SOFT_PIN_ALPHA) * weights[~full]
        return [(size, points[mask], colours[mask]) for size, mask in ((PIN_SIZE, full), (SOFT_PIN_SIZE, ~full))
                if mask.any()]


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


# Each pinned object's pins, read from its (original) mesh: object name -> (what they were read
# from: mesh, group, group index, vertex count; the pinned vertices' indices; their weights).
_pin_cache: dict[str, tuple[tuple, np.ndarray, np.ndarray]] = {}


def _pinned(obj) -> tuple[np.ndarray, np.ndarray]:
    """(indices, weights) of the vertices with a weight above 0 in ``obj``'s Pin Group, from the
    mesh as painted; nothing when the group is unset or not one of its groups (the bake names that)."""
    name = pin_group(obj)[0]
    group = obj.vertex_groups.get(name) if name else None
    if group is None:
        _pin_cache.pop(obj.name, None)
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    mesh = obj.data
    key = (mesh.name, group.name, group.index, len(mesh.vertices))
    cached = _pin_cache.get(obj.name)
    if cached is None or cached[0] != key:
        weights = vertex_group_weights(mesh, group.index)
        index = np.flatnonzero(weights > 0.0)
        cached = _pin_cache[obj.name] = (key, index, weights[index])
    return cached[1], cached[2]


def _pins(lines: Lines, obj, depsgraph) -> None:
    index, weights = _pinned(obj)
    if not len(index):
        return
    # Where the vertices are now: the evaluated mesh (shape keys, an armature, the bake's Mesh
    # Cache move them). A modifier that changes the vertex count (Subdivision) leaves no vertex to
    # match the painted ones; then they are shown where the mesh has them (the engine pins the
    # evaluated vertices, which lie on or near those).
    shown = obj.evaluated_get(depsgraph) if depsgraph is not None else obj
    mesh = shown.data
    if len(mesh.vertices) != len(obj.data.vertices):
        mesh = obj.data
    co = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    m = np.array(shown.matrix_world, dtype=float)
    points = co.reshape(-1, 3)[index].astype(float) @ m[:3, :3].T + m[:3, 3]
    lines.pins.append(Pins(obj.name, points, weights))


@persistent
def _forget_pins(scene, depsgraph) -> None:
    """After an edit: the pin weights of the objects (and meshes) whose geometry changed are read
    again at the next draw (a weight painted, a vertex group added or removed, vertices added)."""
    if not _pin_cache:
        return
    changed = {u.id.name for u in depsgraph.updates
               if u.is_updated_geometry and isinstance(u.id, (bpy.types.Object, bpy.types.Mesh))}
    for name in [n for n, (key, _, _) in _pin_cache.items() if n in changed or key[0] in changed]:
        del _pin_cache[name]


@persistent
def _forget_all_pins(*args) -> None:
    """A file loaded, an undo or redo: names may now mean other objects."""
    _pin_cache.clear()


def overlay_lines(objects, depsgraph=None) -> Lines:
    """What the overlay draws for ``objects`` (a view layer's objects). ``depsgraph`` (the view
    layer's, evaluated) gives where pinned vertices are now; without it, the view layer's."""
    if depsgraph is None and bpy.context.view_layer is not None:
        depsgraph = bpy.context.view_layer.depsgraph
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
        elif obj.type == 'MESH' and role in DEFORMING:
            _pins(lines, obj, depsgraph)
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
        _state["draws"] = draw_lines(overlay_lines(context.view_layer.objects, context.view_layer.depsgraph))
    except Exception as error:  # noqa: BLE001 - a drawing error must not break the viewport
        if len(_state["errors"]) < 5:
            _state["errors"].append(f"{type(error).__name__}: {error}")


def draw_lines(lines: Lines) -> int:
    """Draw ``lines`` into the bound framebuffer with the current view; how many batches it drew."""
    import gpu
    from gpu_extras.batch import batch_for_shader

    count = 0
    gpu.state.blend_set('ALPHA')
    gpu.state.depth_test_set('NONE')  # seen through the wheels and the bodies they are in, and the cloth
    try:
        shader = gpu.shader.from_builtin('POLYLINE_UNIFORM_COLOR')
        shader.uniform_float("viewportSize", gpu.state.viewport_get()[2:])
        shader.uniform_float("lineWidth", LINE_WIDTH)
        for colour, ends in lines.by_colour.items():
            if not ends:
                continue
            shader.uniform_float("color", COLOURS[colour])
            batch_for_shader(shader, 'LINES', {"pos": ends}).draw(shader)
            count += 1
        dots = None
        for size, points, colours in lines.pin_dots():
            if dots is None:
                try:  # Blender 5's points, sized by the shader's "size"
                    dots = gpu.shader.from_builtin('POINT_FLAT_COLOR')
                except ValueError:  # 4.x has none (4.3 lists no POINT_ shader): its points take the state's size
                    dots = gpu.shader.from_builtin('FLAT_COLOR')
            gpu.state.point_size_set(size)
            try:
                dots.uniform_float("size", size)
            except ValueError:  # FLAT_COLOR has no "size"
                pass
            batch_for_shader(dots, 'POINTS', {"pos": points.tolist(), "color": colours.tolist()}).draw(dots)
            count += 1
    finally:
        gpu.state.point_size_set(1.0)
        gpu.state.blend_set('NONE')
    return count


def is_registered() -> bool:
    return _handler is not None


def last_draw_count() -> int:
    """How many batches (colours) the last draw drew (for the GUI check)."""
    return int(_state["draws"])


def errors() -> list[str]:
    return list(_state["errors"])


def _pin_handlers() -> tuple:
    h = bpy.app.handlers
    return ((h.depsgraph_update_post, _forget_pins), (h.load_post, _forget_all_pins),
            (h.undo_post, _forget_all_pins), (h.redo_post, _forget_all_pins))


def _redraw(self, context) -> None:
    for window in getattr(context.window_manager, "windows", ()):
        for area in window.screen.areas:
            if area.type == 'VIEW_3D':
                area.tag_redraw()


def register() -> None:
    global _handler
    # The pins share this toggle rather than having one of their own: it is the add-on's one overlay
    # switch, which already draws more than axes (springs, limits, vehicles): everything that says
    # how the physics is set up, which a user shows or hides as a whole, as Blender's own
    # Overlays button does. Pins are the cloth's way of being held, as connectors are a body's, and
    # are drawn only where a Pin Group holds vertices, so they add nothing to a scene without them.
    add_property(bpy.types.WindowManager, "jakobsen_show_axes", BoolProperty(
        name="Show Axes", default=True, update=_redraw,
        description="Draw the axes of connectors and motors (which way each turns), springs, the "
                    "connectors' limits (ranges, arcs, cones, boxes), each vehicle's forward direction and "
                    "wheel axles, and the pinned vertices of cloth and soft bodies (smaller and fainter "
                    "where the pin weight is below 1) in the 3D View"))
    for handlers, forget in _pin_handlers():
        if forget not in handlers:
            handlers.append(forget)
    if not bpy.app.background and _handler is None:  # headless Blender has no GPU to draw with
        _handler = bpy.types.SpaceView3D.draw_handler_add(_draw, (), 'WINDOW', 'POST_VIEW')


def unregister() -> None:
    global _handler
    if _handler is not None:
        bpy.types.SpaceView3D.draw_handler_remove(_handler, 'WINDOW')
        _handler = None
    for handlers, forget in _pin_handlers():
        if forget in handlers:
            handlers.remove(forget)
    _pin_cache.clear()
    remove_property(bpy.types.WindowManager, "jakobsen_show_axes")
