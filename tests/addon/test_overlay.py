"""The viewport overlay over every connector type, and the pins of cloth and soft bodies.

The geometry (``overlay.overlay_lines``) is read headless from real Blender objects. The drawing
itself (``overlay._draw``, Blender's ``gpu`` module) needs a GPU, which Blender 5 offers in the
background (``gpu.init``): there one test draws a scene with every connector type and a pinned
cloth into an offscreen buffer, in its own process (a GPU context is not set up in the process
the other tests share), and looks at the pixels. The other tests of the overlay (hinge, motor,
slider, spring, vehicle, ragdoll, cardan, box, twist slider) are in test_vehicle_panel.py.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from jakobsen_physics.blender_io import reads  # noqa: E402
from jakobsen_physics.properties import CONNECTOR_TYPE_ITEMS  # noqa: E402
from jakobsen_physics.ui import overlay  # noqa: E402

from .conftest import grid_mesh, link  # noqa: E402
from .test_connectors import _cube, _empty, _enable  # noqa: E402

pytestmark = pytest.mark.blender

KINDS = [item[0] for item in CONNECTOR_TYPE_ITEMS]
ROTATIONS = [(0.0, 0.0, 0.0), (0.0, math.pi / 2, 0.0), (0.4, -0.7, 1.9), (-2.1, 0.3, -0.8)]
# The types whose limits (all switched on) draw something besides the axes.
UNLIMITED = {'FIXED', 'BALL_SOCKET'}


def _rotation(euler) -> np.ndarray:
    from mathutils import Euler

    return np.array(Euler(euler).to_matrix())


def _lines():
    bpy.context.view_layer.update()
    return overlay.overlay_lines(bpy.context.view_layer.objects)


def _connector(kind: str, origin, rotation, size: float = 0.5):
    """A connector Empty of ``kind`` with every limit it can have switched on."""
    body = bpy.data.objects.get("Body") or _cube("Body", location=(0.0, 0.0, -2.0))
    empty = _enable(_empty(f"Joint {kind}", tuple(origin), rotation), 'CONNECTOR', connector_type=kind,
                    object_b=body, use_linear_limit=True, distance_min=-0.2, distance_max=0.7,
                    use_angular_limit=True, angle_min=-0.6, angle_max=1.3, use_cone_limit=True,
                    cone_angle=0.5, twist_angle=0.3, box_lower=(-0.1, -0.3, 0.0), box_upper=(0.2, 0.4, 0.5))
    empty.empty_display_size = size
    return empty


def test_the_tests_cover_every_connector_type_blender_offers(blender):
    empty = _enable(_empty("Joint"), 'CONNECTOR')
    offered = [item.identifier for item in empty.jakobsen.connector.bl_rna.properties["connector_type"].enum_items]
    assert offered == KINDS and len(KINDS) == 10


@pytest.mark.parametrize("kind", KINDS)
def test_every_connector_type_draws_its_axes_and_its_limits_turn_with_the_empty(blender, kind):
    origin = np.array([1.0, -2.0, 0.5])
    local_limits = None
    for rotation in ROTATIONS:
        empty = _connector(kind, origin, rotation)
        lines = _lines()
        r = _rotation(rotation)
        z_axis, x_axis = lines.segments("z"), lines.segments("x")
        assert len(z_axis) == 3 and len(x_axis) == 3  # an arrow: the shaft and two barbs
        assert z_axis[0] == pytest.approx(np.array([origin, origin + 0.5 * r[:, 2]]), abs=1e-6)
        assert x_axis[0] == pytest.approx(np.array([origin, origin + 0.5 * r[:, 0]]), abs=1e-6)
        limit = lines.segments("limit")
        assert (len(limit) > 0) == (kind not in UNLIMITED)
        # In the Empty's axes the limits are the same whichever way the Empty is turned.
        local = (limit.reshape(-1, 3) - origin) @ r
        if local_limits is None:
            local_limits = local
        else:
            assert local == pytest.approx(local_limits, abs=1e-5)
        assert overlay.errors() == []
        bpy.data.objects.remove(empty)


@pytest.mark.parametrize("rotation", ROTATIONS)
def test_a_planar_connectors_square_lies_in_the_plane_it_moves_in(blender, rotation):
    origin = np.array([0.5, 3.0, -1.0])
    _connector('PLANAR', origin, rotation, size=0.8)
    r = _rotation(rotation)
    square = _lines().segments("limit")
    assert len(square) == 4
    local = (square.reshape(-1, 3) - origin) @ r
    assert np.abs(local[:, 2]).max() < 1e-6  # no point off the Empty's XY plane
    corners = {tuple(np.round(p, 5)) for p in local[:, :2]}
    half = 0.6 * 0.8
    assert corners == {(sx * half, sy * half) for sx in (-1.0, 1.0) for sy in (-1.0, 1.0)}
    for a, b in square:  # a closed loop of edges along the Empty's X or Y
        assert abs(abs((b - a) @ r[:, 0]) - 2 * half) < 1e-5 or abs(abs((b - a) @ r[:, 1]) - 2 * half) < 1e-5
    assert all(np.allclose(square[k][1], square[(k + 1) % 4][0]) for k in range(4))


@pytest.mark.parametrize("kind", ['BALL_SOCKET', 'FIXED'])
@pytest.mark.parametrize("rotation", ROTATIONS[1:])
def test_a_ball_and_socket_and_a_fixed_connector_draw_their_axes_at_the_pivot_and_nothing_else(blender, kind,
                                                                                             rotation):
    """Under a turned, scaled parent: the pivot is the Empty's world origin, the axes its world axes."""
    parent = _empty("Parent", (2.0, 1.0, 0.0), (0.3, 0.2, -1.0))
    parent.scale = (2.0, 2.0, 2.0)
    empty = _connector(kind, (0.5, -0.5, 1.0), rotation, size=0.4)
    empty.parent = parent
    lines = _lines()
    m = np.array(empty.matrix_world)
    pivot, world = m[:3, 3], m[:3, :3] / np.linalg.norm(m[:3, :3], axis=0)
    assert not np.allclose(pivot, [0.5, -0.5, 1.0])  # the parent moved it
    for colour, axis in (("z", 2), ("x", 0)):
        shaft = lines.segments(colour)[0]
        assert shaft == pytest.approx(np.array([pivot, pivot + 0.8 * world[:, axis]]), abs=1e-5)
    assert set(lines.by_colour) == {"z", "x"} and not lines.pins


# -- pins ---------------------------------------------------------------------------------------------

WEIGHTS = {0: 1.0, 1: 1.0, 5: 0.5, 9: 0.25, 14: 0.8}  # vertex -> weight in the pin group
ZERO = (3, 20)  # in the group with weight 0: not pinned


def _deforming(role: str, name: str = "Flag", n: int = 5, weights=WEIGHTS):
    obj = link(bpy.data.objects.new(name, grid_mesh(name, n, n, 1.0)))
    group = obj.vertex_groups.new(name="pin")
    for index, weight in weights.items():
        group.add([index], weight, 'REPLACE')
    group.add(list(ZERO), 0.0, 'REPLACE')
    obj.jakobsen.enabled = True
    obj.jakobsen.type = role
    obj.jakobsen.cloth.pin_group = "pin"
    return obj


def _world(obj, local) -> np.ndarray:
    m = np.array(obj.matrix_world, dtype=float)
    return np.asarray(local, dtype=float) @ m[:3, :3].T + m[:3, 3]


def _mesh_co(mesh) -> np.ndarray:
    co = np.empty(len(mesh.vertices) * 3, np.float32)
    mesh.vertices.foreach_get("co", co)
    return co.reshape(-1, 3).astype(float)


@pytest.mark.parametrize("role", ['CLOTH', 'SOFT_BODY'])
def test_the_pins_are_the_pinned_vertices_where_they_are_in_the_world_and_follow_the_object(blender, role):
    obj = _deforming(role)
    co = _mesh_co(obj.data)
    pinned = sorted(WEIGHTS)
    for location, rotation, scale in (((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)),
                                      ((0.3, -0.2, 1.2), (0.2, 0.0, 0.5), (1.5, 1.0, 1.0)),
                                      ((-4.0, 2.0, 0.5), (1.9, -0.4, 2.6), (0.5, 2.0, 0.7))):
        obj.location, obj.rotation_euler, obj.scale = location, rotation, scale
        lines = _lines()
        assert [p.name for p in lines.pins] == [obj.name]
        pins = lines.pins[0]
        assert pins.points == pytest.approx(_world(obj, co[pinned]), abs=1e-5)
        assert pins.weights == pytest.approx([WEIGHTS[i] for i in pinned], abs=1e-6)
        assert not lines.by_colour  # pins are dots, not lines
    obj.jakobsen.enabled = False
    assert not _lines().pins


def test_no_pins_without_a_pin_group_with_weights(blender):
    obj = _deforming('CLOTH', weights={})  # the group holds only weight-0 vertices
    assert not _lines().pins
    obj.vertex_groups["pin"].add([7], 0.6, 'REPLACE')
    assert len(_lines().pins) == 1
    obj.vertex_groups["pin"].remove([7])
    assert not _lines().pins
    empty = obj.vertex_groups.new(name="empty")
    obj.jakobsen.cloth.pin_group = empty.name
    assert not _lines().pins
    obj.jakobsen.cloth.pin_group = "missing"  # not one of its groups (the bake says so; nothing drawn)
    assert not _lines().pins
    obj.jakobsen.cloth.pin_group = ""
    assert not _lines().pins
    obj.jakobsen.cloth.pin_group = "pin"
    obj.vertex_groups.remove(obj.vertex_groups["pin"])
    assert not _lines().pins and overlay.errors() == []


def test_soft_pins_are_drawn_smaller_and_fainter_the_lower_their_weight(blender):
    obj = _deforming('CLOTH')
    co = _mesh_co(obj.data)
    dots = _lines().pin_dots()
    assert len(dots) == 2
    (full_size, full_points, full_colours), (soft_size, soft_points, soft_colours) = dots
    full = [i for i in sorted(WEIGHTS) if WEIGHTS[i] == 1.0]
    soft = [i for i in sorted(WEIGHTS) if WEIGHTS[i] < 1.0]
    assert full_points == pytest.approx(_world(obj, co[full]), abs=1e-6)
    assert soft_points == pytest.approx(_world(obj, co[soft]), abs=1e-6)
    assert soft_size < full_size
    assert full_colours[:, 3] == pytest.approx(1.0)
    alphas = soft_colours[:, 3]
    assert all(a < 1.0 for a in alphas)
    order = np.argsort([WEIGHTS[i] for i in soft])
    assert np.all(np.diff(alphas[order]) > 0)  # a higher weight, a more opaque dot
    assert np.allclose(soft_colours[:, :3], full_colours[0, :3])  # one colour: the pins'

    # Only full pins, only soft pins: one kind of dot.
    obj.vertex_groups["pin"].add(soft, 1.0, 'REPLACE')
    assert [size for size, _, _ in _lines().pin_dots()] == [full_size]
    obj.vertex_groups["pin"].add(sorted(WEIGHTS), 0.9, 'REPLACE')
    assert [size for size, _, _ in _lines().pin_dots()] == [soft_size]


def test_pins_are_drawn_where_the_evaluated_mesh_has_them(blender):
    """A shape key (as an armature, or the bake's Mesh Cache) moves them; a modifier that changes the
    vertex count leaves them where the mesh has them."""
    obj = _deforming('CLOTH')
    obj.rotation_euler = (0.3, 0.0, 0.7)
    co = _mesh_co(obj.data)
    obj.shape_key_add(name="Basis")
    lift = obj.shape_key_add(name="Lift")
    offsets = np.zeros_like(co)
    offsets[:, 2] = np.linspace(0.1, 0.9, len(co))
    lift.data.foreach_set("co", (co + offsets).astype(np.float32).ravel())
    pinned = sorted(WEIGHTS)
    for value in (0.0, 0.5, 1.0):
        lift.value = value
        assert _lines().pins[0].points == pytest.approx(_world(obj, co[pinned] + value * offsets[pinned]), abs=1e-5)
    lift.value = 0.0
    obj.modifiers.new("Subdivision", 'SUBSURF')
    assert _lines().pins[0].points == pytest.approx(_world(obj, co[pinned]), abs=1e-5)


def test_pin_weights_are_read_once_and_again_after_an_edit(blender, monkeypatch):
    """Blender has no bulk read of vertex-group weights: the per-vertex pass runs once per pinned
    object, not per draw, and again only when its mesh is edited; a frame change (playback) moves
    the dots without it."""
    calls = []

    def counted(mesh, index):
        calls.append(mesh.name)
        return reads.vertex_group_weights(mesh, index)

    monkeypatch.setattr(overlay, "vertex_group_weights", counted)
    obj = _deforming('CLOTH', n=100)  # 10,000 vertices
    co = _mesh_co(obj.data)
    obj.keyframe_insert("location", frame=1)
    obj.location = (0.0, 0.0, 3.0)
    obj.keyframe_insert("location", frame=10)
    scene = bpy.context.scene
    scene.frame_set(1)
    for _ in range(3):
        _lines()
    assert calls == ["Flag"]
    scene.frame_set(10)
    assert _lines().pins[0].points == pytest.approx(_world(obj, co[sorted(WEIGHTS)]), abs=1e-5)
    assert _world(obj, co[:1])[0][2] == pytest.approx(3.0)
    assert calls == ["Flag"]
    obj.vertex_groups["pin"].add([42], 0.7, 'REPLACE')  # painted
    pins = _lines().pins[0]
    assert calls == ["Flag", "Flag"]
    pinned = sorted({**WEIGHTS, 42: 0.7}.items())
    assert pins.points == pytest.approx(_world(obj, co[[i for i, _ in pinned]]), abs=1e-5)
    assert pins.weights == pytest.approx([w for _, w in pinned], abs=1e-6)
    _lines()
    assert calls == ["Flag", "Flag"]


# -- drawing, on a GPU ------------------------------------------------------------------------------

_DRAW_SCRIPT = r'''
import json, math, os, sys
import bpy, gpu, numpy as np
from mathutils import Matrix
import jakobsen_physics as addon

bpy.ops.wm.read_factory_settings(use_empty=True)
addon.register()
from jakobsen_physics.properties import CONNECTOR_TYPE_ITEMS
from jakobsen_physics.ui import overlay

try:
    gpu.init()
except SystemError as error:
    print("RESULT " + json.dumps({"skip": str(error)}))
    sys.stdout.flush()
    os._exit(0)


def empty(name, location, rotation=(0.0, 0.0, 0.0)):
    obj = bpy.data.objects.new(name, None)
    bpy.context.scene.collection.objects.link(obj)
    obj.location, obj.rotation_euler, obj.empty_display_size = location, rotation, 0.3
    obj.jakobsen.enabled = True
    return obj


bpy.ops.mesh.primitive_cube_add(size=0.2, location=(-1.8, 1.8, -3.0))
body = bpy.context.object
body.jakobsen.enabled = True
kinds = [item[0] for item in CONNECTOR_TYPE_ITEMS]
for k, kind in enumerate(kinds):
    e = empty(kind, (-1.8 + 0.4 * k, -1.6, 0.0), (0.4 * k, 0.3, -0.2 * k))
    e.jakobsen.type = 'CONNECTOR'
    c = e.jakobsen.connector
    c.connector_type, c.object_b = kind, body
    c.use_linear_limit = c.use_angular_limit = c.use_cone_limit = True
motor = empty("Motor", (1.5, 1.6, 0.0))
motor.jakobsen.type = 'MOTOR'
motor.jakobsen.motor.object_a = body
spring = empty("Spring", (-1.4, 1.6, 0.0))
spring.jakobsen.type = 'SPRING'
spring.jakobsen.spring.object_a = body

# A cloth in the view's middle, its corners pinned: two with weight 1, two with 0.4.
mesh = bpy.data.meshes.new("Flag")
mesh.from_pydata([(-0.5, -0.5, 0.0), (0.5, -0.5, 0.0), (-0.5, 0.5, 0.0), (0.5, 0.5, 0.0)], [], [(0, 1, 3, 2)])
cloth = bpy.data.objects.new("Flag", mesh)
bpy.context.scene.collection.objects.link(cloth)
group = cloth.vertex_groups.new(name="pin")
group.add([0, 3], 1.0, 'REPLACE')
group.add([1, 2], 0.4, 'REPLACE')
cloth.jakobsen.enabled = True
cloth.jakobsen.type = 'CLOTH'
cloth.jakobsen.cloth.pin_group = "pin"
bpy.context.view_layer.update()
lines = overlay.overlay_lines(bpy.context.view_layer.objects)

SIZE = 200
view = Matrix.Identity(4)
projection = Matrix(((0.5, 0, 0, 0), (0, 0.5, 0, 0), (0, 0, -0.1, 0), (0, 0, 0, 1)))  # x, y in [-2, 2]
offscreen = gpu.types.GPUOffScreen(SIZE, SIZE)
with offscreen.bind():
    framebuffer = gpu.state.active_framebuffer_get()
    framebuffer.clear(color=(0.0, 0.0, 0.0, 0.0))
    with gpu.matrix.push_pop():
        gpu.matrix.load_matrix(view)
        gpu.matrix.load_projection_matrix(projection)
        overlay._draw()
    pixels = np.array(framebuffer.read_color(0, 0, SIZE, SIZE, 4, 0, 'FLOAT').to_list()).reshape(SIZE, SIZE, 4)
offscreen.free()
if len(sys.argv) > 1:  # where to keep the picture, to look at
    np.save(sys.argv[1], pixels)


def dot(point):
    """The pin-coloured pixels around ``point`` (world, in the cloth's plane): how many, the most opaque."""
    i, j = (int(round((c / 4.0 + 0.5) * SIZE - 0.5)) for c in point[:2])
    patch = pixels[j - 8:j + 9, i - 8:i + 9].reshape(-1, 4)
    pin = np.array(overlay.COLOURS["pin"][:3])
    # A dot's pixels: its colour (premultiplied by its alpha, by the blending over black).
    ours = [p for p in patch if p[3] > 0.05 and np.allclose(p[:3] / p[3], pin, atol=0.05)]
    return len(ours), max((float(p[3]) for p in ours), default=0.0)


print("RESULT " + json.dumps({
    "errors": overlay.errors(), "draws": overlay.last_draw_count(), "colours": sorted(lines.by_colour),
    "full": [dot(p) for p in ((-0.5, -0.5), (0.5, 0.5))],
    "soft": [dot(p) for p in ((0.5, -0.5), (-0.5, 0.5))],
    "axes_drawn": int(np.count_nonzero(pixels[..., 3] > 0.5)),
}))
sys.stdout.flush()
os._exit(0)
'''


def test_the_overlay_draws_every_connector_type_and_the_pins_on_a_gpu_without_errors(tmp_path):
    """(Blender 4.x offers no GPU in the background: there this is checked in the GUI.)"""
    import gpu

    if not hasattr(gpu, "init"):
        pytest.skip(f"Blender {bpy.app.version_string} has no GPU in the background (gpu.init)")
    script = tmp_path / "draw.py"
    script.write_text(_DRAW_SCRIPT)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    found = [line[len("RESULT "):] for line in run.stdout.splitlines() if line.startswith("RESULT ")]
    assert found, f"the drawing process ended with {run.returncode}:\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}"
    result = json.loads(found[-1])
    if "skip" in result:
        pytest.skip(f"no GPU for Blender in the background here: {result['skip']}")
    assert result["errors"] == []
    # Every colour of lines (axes, limits, motor, spring) and the two kinds of pins, one batch each.
    assert set(result["colours"]) == {"x", "z", "limit", "motor", "spring"}
    assert result["draws"] == len(result["colours"]) + 2
    assert result["axes_drawn"] > 500
    full_count, soft_count = result["full"][0][0], result["soft"][0][0]
    for count, alpha in result["full"]:
        assert count == full_count and alpha == pytest.approx(1.0, abs=0.02)
    for count, alpha in result["soft"]:
        assert count == soft_count and alpha == pytest.approx(0.3 + 0.7 * 0.4, abs=0.03)
    assert 0 < soft_count < full_count  # a soft pin's dot is smaller
