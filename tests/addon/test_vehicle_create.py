"""Create Vehicle and Hitch Trailer (``operators/vehicle.py``) and the wheel geometry they stand on
(``translate/wheels.py``).

The geometry is tested on its own (numpy): hubs, axles, radii and widths of cylinders and of
wheels with tyres, rims, bolts and valves in any orientation and at any segment count; a mesh
split into its wheels; a car's layout. The operators are tested in Blender: a car built from
primitives with its wheels selected, and a copy of an imported glTF car's structure (a Y-up
rotation Empty with a scale over the body, axle meshes holding two wheels each, shared by both
axles, spin keys, non-manifold parts, children that are not wheels) rigged from the chassis
alone; every bad selection is refused with a message naming the objects and leaves the scene
exactly as it was.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from jakobsen_engine import JakobsenError  # noqa: E402
from jakobsen_physics import actions  # noqa: E402
from jakobsen_physics.properties import AXIS_ITEMS  # noqa: E402
from jakobsen_physics.translate import wheels as wh  # noqa: E402

from . import vehicle_assets as va  # noqa: E402

G = 9.81


# -- geometry (numpy) ---------------------------------------------------------------------------------

def _angle(a, b) -> float:
    """Angle in radians between two directions, either sign."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.arctan2(np.linalg.norm(np.cross(a, b)), abs(a @ b)))


@pytest.mark.parametrize("segments", [5, 6, 8, 13, 32, 96])
@pytest.mark.parametrize("ratio", [0.05, 0.3, 0.7, 1.0, math.sqrt(2.0), 2.0, 6.0])
def test_cylinder_hub_axle_radius_width(segments, ratio):
    """A closed cylinder of any width to radius ratio (a thin disc to a long roller, including
    the width at which its second moments are the same about every axis), any segment count and
    orientation: its hub, axle, radius and width exactly."""
    rng = np.random.default_rng(segments * 100 + int(ratio * 10))
    for radius in (0.02, 0.33, 4.0):
        rot, centre = va.random_rotation(rng), rng.normal(size=3) * 10
        v, _ = va.cylinder(radius, ratio * radius, segments, phase=rng.uniform(0, 2 * np.pi))
        for caps in (True, False):
            pts = np.r_[v, [[0, 0, -ratio * radius / 2], [0, 0, ratio * radius / 2]]] if caps else v
            wheel = wh.wheel_geometry(pts @ rot.T + centre)
            assert np.linalg.norm(wheel.hub - centre) < 1e-9 * max(radius, 1.0) * 10
            assert _angle(wheel.axle, rot[:, 2]) < 1e-9
            assert abs(np.linalg.norm(wheel.axle) - 1.0) < 1e-12
            assert wheel.radius == pytest.approx(radius, rel=1e-9)
            assert wheel.width == pytest.approx(ratio * radius, rel=1e-9)


@pytest.mark.parametrize("segments", [12, 24, 48])
def test_wheel_with_tyre_rim_bolts_and_valve(segments):
    """A wheel as modelled (a tyre of a rounded profile, a rim, five bolts, a valve stem off to one
    side: the centroid is off the axle), in random orientations: the hub on the axle within a
    micrometre per metre, the axle exact, the radius the tyre's."""
    rng = np.random.default_rng(segments)
    for _ in range(5):
        radius = rng.uniform(0.2, 0.6)
        width = radius * rng.uniform(0.3, 0.9)
        rot, centre = va.random_rotation(rng), rng.normal(size=3) * 3
        parts = va.placed(va.wheel_parts(radius, width, segments, phase=rng.uniform(0, 6.3)), rot, centre)
        points = np.concatenate([v for v, _ in parts])
        wheel = wh.wheel_geometry(rng.permutation(points))
        assert np.linalg.norm(wheel.hub - centre) < 1e-6 * radius
        assert _angle(wheel.axle, rot[:, 2]) < 1e-6
        assert wheel.radius == pytest.approx(radius, rel=1e-6)
        assert wheel.width == pytest.approx(width, rel=1e-6)
        assert wh.covers_circle(points, wheel)


def test_wheel_without_volume_is_refused_by_name():
    """A flat disc, a line of vertices, a single vertex, no vertices: each a JakobsenError naming it."""
    disc, _ = va.cylinder(0.3, 0.0, 16)
    line = np.outer(np.linspace(0, 1, 10), [1.0, 2.0, 3.0])
    for points, words in ((disc, "no volume"), (line, "no volume"), (np.zeros((1, 3)), "only 1 vertex"),
                          (np.zeros((0, 3)), "no vertices"), (np.zeros((3, 3)), "only 3 vertices")):
        with pytest.raises(JakobsenError, match=f"wheel 'W'.*{words}"):
            wh.wheel_geometry(points, where="wheel 'W'")


def test_a_box_does_not_go_round():
    """covers_circle tells a wheel from a box (whose corners are as far from its axis as a rim)."""
    v, _ = va.box((0, 0, 0), (0.3, 0.3, 0.1))
    wheel = wh.wheel_geometry(v)
    assert not wh.covers_circle(v, wheel)
    for segments in (6, 7, 12):
        c, _ = va.cylinder(0.3, 0.1, segments, phase=0.4)
        assert wh.covers_circle(c, wh.wheel_geometry(c))


def _axle_mesh(rng, segments=24):
    """Both wheels of an axle in one mesh (each a tyre, a rim, bolts and a valve: loose parts), in
    a shuffled vertex order: (vertices, faces list, expected vertex sets, hubs)."""
    turn = va.random_rotation(rng)
    parts, members, hubs, offset = [], [], [], 0
    for side in (1.0, -1.0):
        hub = turn @ np.array([side * va.TRACK / 2, 0.0, 0.0])
        wheel = va.placed(va.wheel_parts(segments=segments), turn @ va.rotation((0, 1, 0), math.pi / 2), hub)
        count = sum(len(v) for v, _ in wheel)
        members.append(np.arange(offset, offset + count))
        parts += wheel
        hubs.append(hub)
        offset += count
    verts, faces = va.join(parts)
    perm = rng.permutation(len(verts))  # new index of each old vertex
    new_verts = np.empty_like(verts)
    new_verts[perm] = verts
    faces = [[int(perm[i]) for i in f] for f in faces]
    return new_verts, faces, [np.sort(perm[m]) for m in members], hubs


def test_an_axle_mesh_splits_into_its_two_wheels():
    """An axle mesh: tyres, rims, bolts and valves are loose parts; the parts of one wheel overlap
    and make one wheel, the two wheels are two, whether edges or faces are given."""
    rng = np.random.default_rng(7)
    verts, faces, members, hubs = _axle_mesh(rng)
    edges = wh._edges_of(faces, len(verts))
    for given in (faces, edges):
        groups = wh.group_wheels(verts, given)
        assert len(groups) == 2
        assert sorted(map(tuple, groups)) == sorted(map(tuple, members))
        found = sorted((wh.wheel_geometry(verts[g]).hub for g in groups), key=lambda h: tuple(h))
        for hub, expected in zip(found, sorted(hubs, key=lambda h: tuple(h)), strict=True):
            assert np.linalg.norm(hub - expected) < 1e-9
    quads = np.array([f for f in faces if len(f) == 4])
    assert len(wh.group_wheels(verts, quads)) >= 2  # (f, 4) arrays are faces too


def test_connected_labels_match_a_search():
    """The array union-find labels every element with the smallest index of its component, as a
    plain graph search does, on random graphs from sparse (many parts) to dense (one part)."""
    rng = np.random.default_rng(3)
    for n, m in ((1, 0), (50, 10), (500, 300), (500, 2000), (2000, 1000)):
        pairs = rng.integers(0, n, size=(m, 2))
        labels = wh.connected_labels(n, pairs)
        neighbours = [[] for _ in range(n)]
        for a, b in pairs:
            neighbours[a].append(b)
            neighbours[b].append(a)
        expected = np.full(n, -1)
        for start in range(n):
            if expected[start] >= 0:
                continue
            stack, expected[start] = [start], start
            while stack:
                for other in neighbours[stack.pop()]:
                    if expected[other] < 0:
                        expected[other] = start
                        stack.append(other)
        np.testing.assert_array_equal(labels, expected)


@pytest.mark.parametrize("yaw", [0.0, 0.4, math.pi / 2, 2.5])
def test_layout_of_a_car(yaw):
    """Four wheels (axles given with random signs, a little toe) under a chassis turned by ``yaw``:
    the lateral direction, the forward axis by Blender's convention (-Y along the wheelbase), the
    front axle and the left wheels; a chassis with its length along local X gets -X; a Y-up
    chassis (length along its local Z, an import's) gets +Z; an override is kept."""
    rng = np.random.default_rng(int(yaw * 10))
    turn = va.rotation((0, 0, 1), yaw)
    hubs = {pos: turn @ h for pos, h in va.car_hubs().items()}
    names = list(hubs)
    axles = np.array([turn @ va.rotation((0, 0, 1), rng.uniform(-0.03, 0.03)) @ [1.0, 0, 0] * rng.choice([-1, 1])
                      for _ in names])
    for chassis_rot, axis in ((turn, 'NEG_Y'), (turn @ va.rotation((0, 0, 1), math.pi / 2), 'NEG_X'),
                              (turn @ va.Y_UP_TO_Z_UP, 'POS_Z')):
        m = np.eye(4)
        m[:3, :3] = chassis_rot * 0.5  # a scale does not matter
        layout = wh.wheel_layout([hubs[n] for n in names], axles, m, radii=[va.RADIUS] * 4)
        assert layout.forward_axis == axis
        forward = wh.axis_vector(m, axis)
        lateral = turn @ [1.0, 0, 0]
        np.testing.assert_allclose(forward, turn @ [0, -1.0, 0], atol=1e-12)
        assert _angle(layout.lateral, lateral) < 0.03 and layout.lateral @ lateral > 0
        assert [bool(f) for f in layout.front] == [n[0] == "F" for n in names]
        assert [bool(s) for s in layout.on_left] == [n[1] == "L" for n in names]
        assert layout.axle_count == 2
    m = np.eye(4)
    m[:3, :3] = turn
    backwards = wh.wheel_layout([hubs[n] for n in names], axles, m, forward_axis='POS_Y')
    assert backwards.forward_axis == 'POS_Y'
    assert [bool(f) for f in backwards.front] == [n[0] == "R" for n in names]
    assert [bool(s) for s in backwards.on_left] == [n[1] == "R" for n in names]
    trailer = wh.wheel_layout([hubs["RL"], hubs["RR"]], axles[2:], m)
    assert trailer.axle_count == 1 and not trailer.front.any()  # one axle: nothing to steer


def test_unparallel_axles_are_named():
    axles = [[1.0, 0, 0], [-1.0, 0.05, 0], [0.0, 1.0, 0], [1.0, 0, 0.1]]
    bad = wh.unparallel_axles(axles, ["a", "b", "c", "d"])
    assert [(first, other) for first, other, _ in bad] == [("a", "c")]
    assert bad[0][2] == pytest.approx(90.0)


# -- Blender: Create Vehicle -----------------------------------------------------------------------

def _world_vertices(objects) -> np.ndarray:
    out = []
    for obj in objects:
        co = np.empty(len(obj.data.vertices) * 3, np.float32)
        obj.data.vertices.foreach_get("co", co)
        m = np.array(obj.matrix_world)
        out.append(co.reshape(-1, 3).astype(np.float64) @ m[:3, :3].T + m[:3, 3])
    return np.concatenate(out) if out else np.zeros((0, 3))


def _same_points(a: np.ndarray, b: np.ndarray, tol: float) -> None:
    """The same multiset of points (within ``tol``): every point of each has one in the other."""
    assert len(a) == len(b)
    d = np.linalg.norm(a[:, None, :] - b[None, :, :], axis=2)
    assert d.min(axis=1).max() < tol and d.min(axis=0).max() < tol


def _state(helpers) -> dict:
    """What a refused Create Vehicle must leave as it was: the conftest snapshot (objects,
    matrices, meshes, actions) and the parents, mesh users, selection and active object."""
    out = helpers.snapshot()
    view_layer = bpy.context.view_layer
    out["parents"] = {o.name: (o.parent.name if o.parent else None, tuple(map(tuple, o.matrix_parent_inverse)))
                      for o in bpy.data.objects}
    out["users"] = {m.name: (m.users, len(m.vertices)) for m in bpy.data.meshes}
    out["selection"] = sorted(o.name for o in view_layer.objects if o.select_get())
    out["active"] = view_layer.objects.active.name if view_layer.objects.active else None
    out["nla"] = {o.name: [(t.name, t.mute, [s.action.name for s in t.strips]) for t in o.animation_data.nla_tracks]
                  for o in bpy.data.objects if o.animation_data}
    out["collections"] = {c.name: sorted(o.name for o in c.objects) for c in bpy.data.collections}
    return out


def _assert_same(after: dict, before: dict) -> None:
    """Equal states; else the first differing entries, by name."""
    for key in before:
        if after[key] != before[key] and isinstance(before[key], dict):
            changed = sorted(k for k in set(before[key]) | set(after[key]) if before[key].get(k) != after[key].get(k))
            raise AssertionError(f"{key} changed: " + "; ".join(f"{k}: {before[key].get(k)} -> {after[key].get(k)}"
                                                                for k in changed[:3]))
        assert after[key] == before[key], key


def _check_wheel(wheel, hub, axle, radius, width) -> None:
    """A rigged wheel: its origin at the hub, its local Z along the axle, no scale, a Cylinder
    shape whose size is the wheel's."""
    m = np.array(wheel.matrix_world)
    np.testing.assert_allclose(m[:3, 3], hub, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(m[:3, :3], axis=0), 1.0, atol=1e-6)
    assert _angle(m[:3, 2], axle) < 1e-5
    assert wheel.parent is None
    rb = wheel.jakobsen.rigid_body
    assert wheel.jakobsen.enabled and wheel.jakobsen.type == 'RIGID_BODY'
    assert rb.collision_shape == 'CYLINDER' and rb.dynamic == 'ON'
    co = np.empty(len(wheel.data.vertices) * 3, np.float32)
    wheel.data.vertices.foreach_get("co", co)
    local = co.reshape(-1, 3)
    # The local bounds the engine fits its cylinder to: centred on the origin, the wheel's size.
    np.testing.assert_allclose((local.min(axis=0) + local.max(axis=0)) / 2, 0.0, atol=1e-5 * radius + 1e-6)
    assert np.ptp(local[:, 2]) == pytest.approx(width, rel=1e-5)
    assert np.linalg.norm(local[:, :2], axis=1).max() == pytest.approx(radius, rel=1e-5)
    assert rb.mass == pytest.approx(260.0 * math.pi * radius ** 2 * width, rel=1e-4)


def _check_connector(empty, chassis, wheel, hub, left) -> None:
    """A Wheel Suspension connector at the hub: X along the axle to the car's left, Z up."""
    c = empty.jakobsen.connector
    assert empty.jakobsen.enabled and empty.jakobsen.type == 'CONNECTOR'
    assert c.connector_type == 'WHEEL_SUSPENSION' and c.object_a == chassis and c.object_b == wheel
    assert c.ignore_collisions
    m = np.array(empty.matrix_world)
    np.testing.assert_allclose(m[:3, 3], hub, atol=1e-5)
    axes = m[:3, :3] / np.linalg.norm(m[:3, :3], axis=0)
    np.testing.assert_allclose(axes[:, 0], left, atol=1e-4)
    np.testing.assert_allclose(axes[:, 2], [0, 0, 1.0], atol=1e-4)
    assert np.linalg.det(axes) == pytest.approx(1.0)
    assert empty.name == f"{wheel.name} Suspension"
    assert chassis.users_collection[0] in empty.users_collection


def _check_vehicle(chassis, wheels, *, axis, chassis_mass) -> None:
    v = chassis.jakobsen.vehicle
    assert v.enabled and v.forward_axis == axis
    rb = chassis.jakobsen.rigid_body
    assert chassis.jakobsen.enabled and chassis.jakobsen.type == 'RIGID_BODY'
    assert rb.mass == pytest.approx(chassis_mass, rel=1e-4)
    n = len(wheels)
    radius = np.mean([_radius(w) for w in wheels])
    total = rb.mass + sum(w.jakobsen.rigid_body.mass for w in wheels)
    for axle in ("front", "rear"):
        travel = getattr(v, f"{axle}_suspension_travel")
        k = getattr(v, f"{axle}_suspension_stiffness")
        assert travel == pytest.approx(0.6 * radius, rel=1e-4)
        assert getattr(v, f"{axle}_suspension_rest") == 0.0
        assert k == pytest.approx(rb.mass * G / n / (travel / 4), rel=1e-3)
        assert getattr(v, f"{axle}_suspension_damping") == pytest.approx(2 * 0.4 * math.sqrt(k * rb.mass / n), rel=1e-3)
        # The sag under the chassis' weight is a quarter of the travel.
        assert rb.mass * G / n / k == pytest.approx(travel / 4, rel=1e-3)
    assert v.motor_torque == pytest.approx(total * G * 0.3 * radius, rel=1e-3)  # it pushes the car at 0.3 g
    assert v.brake_torque == pytest.approx(2 * total * G * radius / n, rel=1e-3)
    for w in wheels:
        assert w.jakobsen.rigid_body.friction == pytest.approx(v.wheel_friction)


def _radius(wheel) -> float:
    co = np.empty(len(wheel.data.vertices) * 3, np.float32)
    wheel.data.vertices.foreach_get("co", co)
    return float(np.linalg.norm(co.reshape(-1, 3)[:, :2], axis=1).max())


def _suspensions():
    return sorted((o for o in bpy.data.objects if o.type == 'EMPTY' and o.jakobsen.enabled
                   and o.jakobsen.type == 'CONNECTOR'), key=lambda o: o.name)


def _signed_volume(obj) -> float:
    """The volume the object's faces enclose in world space: negative if they face inwards there."""
    world = _world_vertices([obj])
    mesh = obj.data
    totals = np.empty(len(mesh.polygons), np.int32)
    mesh.polygons.foreach_get("loop_total", totals)
    corners = np.empty(int(totals.sum()), np.int32)
    mesh.polygons.foreach_get("vertices", corners)
    starts = np.concatenate(([0], np.cumsum(totals)[:-1]))
    first = np.repeat(starts, totals - 2)  # a fan of triangles per face
    k = np.concatenate([np.arange(1, t - 1) for t in totals]) + first
    a, b, c = world[corners[first]], world[corners[k]], world[corners[k + 1]]
    return float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0)


@pytest.mark.blender
@pytest.mark.parametrize("yaw, mirrored", [(0.0, False), (0.7, True)])
def test_car_from_primitives(blender, helpers, yaw, mirrored):
    """A box and four Add > Cylinder wheels (selected, the box active), the car turned by ``yaw``,
    the right wheels mirror images or not, a hubcap parented to one wheel: one click makes four
    wheels re-based at their hubs (the world vertices, the way their faces face and the hubcap
    unchanged), four Wheel Suspension connectors, masses from densities, the suspension, motor
    and brakes from them, and the vehicle with forward -Y; a second click keeps it as it is."""
    chassis, wheels = va.primitive_car(bpy, yaw=yaw, mirror_right=mirrored)
    hubcap = va.mesh_object(bpy, "Hubcap", *va.cylinder(0.15, 0.02, 12))
    hubcap.matrix_world = wheels[0].matrix_world
    hubcap.parent = wheels[0]
    hubcap.matrix_parent_inverse = wheels[0].matrix_world.inverted()
    bpy.context.view_layer.update()
    hubcap_world = np.array(hubcap.matrix_world)
    before = {w.name: _world_vertices([w]) for w in wheels}
    volumes = {w.name: _signed_volume(w) for w in wheels}
    chassis_world = _world_vertices([chassis])
    va.select(bpy, chassis, *wheels)
    assert bpy.ops.jakobsen.vehicle_create() == {'FINISHED'}
    turn = va.rotation((0, 0, 1), yaw)
    left = turn @ [1.0, 0, 0]
    expected = {f"Wheel.{pos}": turn @ hub for pos, hub in va.car_hubs().items()}
    for w in wheels:
        _check_wheel(w, expected[w.name], left, va.RADIUS, va.WIDTH)
        _same_points(_world_vertices([w]), before[w.name], 1e-5)
        empty = bpy.data.objects[f"{w.name} Suspension"]
        _check_connector(empty, chassis, w, expected[w.name], left)
        assert _signed_volume(w) == pytest.approx(volumes[w.name], rel=1e-5)
        assert (np.linalg.det(np.array(w.matrix_world)[:3, :3]) < 0) == (mirrored and w.name.endswith("R"))
    np.testing.assert_allclose(_world_vertices([chassis]), chassis_world, atol=1e-6)
    np.testing.assert_allclose(np.array(hubcap.matrix_world), hubcap_world, atol=1e-6)
    assert hubcap.parent == wheels[0] and not hubcap.jakobsen.enabled
    _check_vehicle(chassis, wheels, axis='NEG_Y', chassis_mass=110.0 * va.BODY[0] * va.BODY[1] * va.BODY[2] * 0.6)
    assert len(_suspensions()) == 4
    assert bpy.context.view_layer.objects.active == chassis

    # Again: the same rig (the connectors are reused, nothing moves), and a mass the user set stays.
    chassis.jakobsen.rigid_body.mass = 1500.0
    before_again = {o.name: np.array(o.matrix_world) for o in bpy.data.objects}
    va.select(bpy, chassis, *wheels)
    assert bpy.ops.jakobsen.vehicle_create() == {'FINISHED'}
    assert len(_suspensions()) == 4 and len(bpy.data.objects) == len(before_again)
    for o in bpy.data.objects:
        np.testing.assert_allclose(np.array(o.matrix_world), before_again[o.name], atol=1e-5)
    _check_vehicle(chassis, wheels, axis='NEG_Y', chassis_mass=1500.0)


def _gltf_expectations(length_axis: str):
    to_world = va.car_to_world(length_axis)
    hubs = {pos: to_world @ h for pos, h in va.car_hubs().items()}
    names = {"FL": "FrontAxle.L", "FR": "FrontAxle.R", "RL": "RearAxle.L", "RR": "RearAxle.R"}
    return {names[pos]: hub for pos, hub in hubs.items()}, to_world @ [1.0, 0, 0]


def _rig_gltf(helpers, length_axis: str, *, select_wheels: bool, shared_action: bool = False):
    root, body, axles = va.gltf_car(bpy, length_axis=length_axis, shared_action=shared_action)
    originals = _world_vertices(axles)
    actions_before = {a.name: a for a in bpy.data.actions}
    keys_before = helpers.snapshot()["actions"]
    va.select(bpy, body, *(axles if select_wheels else ()))
    assert bpy.ops.jakobsen.vehicle_create() == {'FINISHED'}
    return root, body, originals, actions_before, keys_before


@pytest.mark.blender
@pytest.mark.parametrize("select_wheels, shared_action", [(False, False), (True, False), (False, True)],
                         ids=["chassis-alone", "wheels-selected", "one-action"])
def test_imported_gltf_car(blender, helpers, select_wheels, shared_action):
    """The imported glTF car, length along its local X (front -X): one click, with the chassis
    alone (its wheels found among its children, the steering wheel, mirror and headlight left
    alone) or with the axles selected, makes four wheel objects from the two axle meshes (split,
    single user, unparented, re-based: every vertex where it was), keeps the body under its
    Y-up Empty, puts the axles' spin actions in muted NLA tracks (kept, not played), and adds a
    connector at each hub. With one action for both axles (a slot each, on Blender 4.4 and later)
    each wheel keeps its axle's slot."""
    root, body, originals, actions_before, keys_before = _rig_gltf(helpers, "X", select_wheels=select_wheels,
                                                                   shared_action=shared_action)
    hubs, left = _gltf_expectations("X")
    wheels = [bpy.data.objects[name] for name in sorted(hubs)]
    assert sorted(o.name for o in bpy.data.objects if o.type == 'MESH' and o.jakobsen.enabled) == \
        sorted(["Body", *hubs])
    _same_points(_world_vertices(wheels), originals, 1e-5)
    assert len({w.data.name for w in wheels}) == 4 and all(w.data.users == 1 for w in wheels)
    for w in wheels:
        _check_wheel(w, hubs[w.name], left, va.RADIUS, va.WIDTH)
        _check_connector(bpy.data.objects[f"{w.name} Suspension"], body, w, hubs[w.name], left)
        assert [m.name for m in w.data.materials] == ["Tyre"] and w.data.uv_layers.get("UVMap") is not None
        # The spin is kept in a muted NLA track, not played.
        ad = w.animation_data
        assert ad.action is None
        (track,) = ad.nla_tracks
        assert track.mute and track.name == "[Action Stash]"
        axle = "FrontAxle" if w.name.startswith("Front") else "RearAxle"
        strip = track.strips[0]
        assert strip.action.name == ("AxlesAction" if shared_action else f"{axle}Action")
        if actions.SLOTTED:
            assert strip.action_slot.identifier == f"OB{axle}"
    # Nothing of the user's animation is lost: the same actions with the same keys.
    assert helpers.snapshot()["actions"] == keys_before and set(actions_before) == {a.name for a in bpy.data.actions}
    assert body.parent == root and not body.jakobsen.rigid_body.use_density
    assert sorted(c.name for c in body.children) == ["Headlight", "Mirror", "SteeringWheel"]
    for decoy in body.children:
        assert not decoy.jakobsen.enabled
    _check_vehicle(body, wheels, axis='NEG_X', chassis_mass=110.0 * va.BODY[0] * va.BODY[1] * va.BODY[2])
    # Playback shows no spin: the wheels stay where they are on every frame.
    rest = {w.name: np.array(w.matrix_world) for w in wheels}
    for frame in (1, 12, 30, 48):
        bpy.context.scene.frame_set(frame)
        for w in wheels:
            np.testing.assert_allclose(np.array(w.matrix_world), rest[w.name], atol=1e-6)


@pytest.mark.blender
@pytest.mark.parametrize("nodes", [True, False], ids=["under-wheel-nodes", "under-the-body"])
def test_a_rim_beside_its_tyre_turns_with_the_tyre(blender, helpers, nodes):
    """Wheels imported as nodes (an Empty per wheel, a child of the body, holding the tyre, a
    rim and a brake caliper), or the three children of the body. The tyre becomes the wheel;
    the rim, round about the same axle on the same hub, is parented to it where it is (it was
    left where it hung, which the bake does not turn: 53-79 mm off its tyre in 2 s); the
    caliper, not round, stays. Baked driving, each rim keeps its place on its tyre."""
    from mathutils import Matrix

    chassis, wheels = _primitive(bpy)
    rims, calipers = [], []
    for w in wheels:
        node = chassis
        if nodes:
            node = bpy.data.objects.new(f"Node {w.name}", None)
            bpy.context.scene.collection.objects.link(node)
            node.parent = chassis
            node.matrix_world = w.matrix_world.copy()
        v, f = va.cylinder(0.7 * va.RADIUS, 0.8 * va.WIDTH, 24)
        rim = va.mesh_object(bpy, f"Rim {w.name}", v, f)
        v, f = va.box((0.6 * va.RADIUS, 0.0, 0.0), (0.05, 0.04, 0.03))  # off the hub, in the wheel's frame
        caliper = va.mesh_object(bpy, f"Caliper {w.name}", v, f)
        for part in (w, rim, caliper):
            world = w.matrix_world.copy()
            part.parent = node
            part.matrix_world = world
        rims.append(rim)
        calipers.append(caliper)
    bpy.context.view_layer.update()
    rim_world = [np.array(r.matrix_world) for r in rims]
    va.select(bpy, chassis)
    assert bpy.ops.jakobsen.vehicle_create() == {'FINISHED'}
    for w, rim, caliper, world in zip(wheels, rims, calipers, rim_world, strict=True):
        assert w.jakobsen.enabled and not rim.jakobsen.enabled
        assert rim.parent == w and caliper.parent.name == (f"Node {w.name}" if nodes else chassis.name)
        np.testing.assert_allclose(np.array(rim.matrix_world), world, atol=1e-5)  # (single precision)
    chassis.jakobsen.vehicle.target_speed = 4.0
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 24
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    scene.frame_set(1)
    offsets = [Matrix(w.matrix_world).inverted() @ r.matrix_world for w, r in zip(wheels, rims, strict=True)]
    start = np.array(chassis.matrix_world)[:3, 3]
    for frame in (6, 12, 24):
        scene.frame_set(frame)
        for w, r, offset in zip(wheels, rims, offsets, strict=True):
            np.testing.assert_allclose(np.array(w.matrix_world @ offset), np.array(r.matrix_world), atol=1e-5)
    assert np.linalg.norm(np.array(chassis.matrix_world)[:3, 3] - start) > 0.5  # it drove


@pytest.mark.blender
def test_running_it_again_with_the_chassis_alone_re_rigs_the_car(blender, helpers):
    """The imported car rigged with its chassis alone (its wheels found among its children, then
    unparented by the rig), then rigged again the same way: the second run takes the wheels its
    Wheel Suspensions hold (it was refused: "no wheels ... it has no child meshes"), and the car
    has the same wheels and one connector each, at the same hubs."""
    _, body, _, _, _ = _rig_gltf(helpers, "X", select_wheels=False)
    hubs, left = _gltf_expectations("X")
    connectors = sorted(o.name for o in _suspensions())
    va.select(bpy, body)
    assert bpy.ops.jakobsen.vehicle_create() == {'FINISHED'}
    assert sorted(o.name for o in _suspensions()) == connectors and len(connectors) == 4
    for name, hub in hubs.items():
        wheel = bpy.data.objects[name]
        _check_wheel(wheel, hub, left, va.RADIUS, va.WIDTH)
        _check_connector(bpy.data.objects[f"{name} Suspension"], body, wheel, hub, left)


@pytest.mark.blender
@pytest.mark.xfail('POS_Z' not in {item[0] for item in AXIS_ITEMS}, strict=True,
                   reason="the vehicle's Forward setting (properties.AXIS_ITEMS) has no +Z/-Z yet; a Y-up "
                          "chassis has glTF's front along its local +Z")
def test_imported_gltf_car_front_along_local_z(blender, helpers):
    """The imported glTF car as the glTF convention has it: the front at +Z in the file's Y-up axes,
    which is the chassis' local +Z under the import's rotation Empty (world -Y)."""
    root, body, originals, _, _ = _rig_gltf(helpers, "Z", select_wheels=False)
    hubs, left = _gltf_expectations("Z")
    wheels = [bpy.data.objects[name] for name in sorted(hubs)]
    _same_points(_world_vertices(wheels), originals, 1e-5)
    for w in wheels:
        _check_wheel(w, hubs[w.name], left, va.RADIUS, va.WIDTH)
        _check_connector(bpy.data.objects[f"{w.name} Suspension"], body, w, hubs[w.name], left)
    _check_vehicle(body, wheels, axis='POS_Z', chassis_mass=110.0 * va.BODY[0] * va.BODY[1] * va.BODY[2])


def _ground():
    ground = va.mesh_object(bpy, "Ground", *va.box((0.0, 0.0, -0.5), (40.0, 40.0, 0.5)))
    ground.jakobsen.enabled = True
    ground.jakobsen.type = 'COLLIDER'
    ground.jakobsen.collider.shape = 'BOX'
    return ground


@pytest.mark.blender
@pytest.mark.parametrize("length_axis", [
    "X", pytest.param("Z", marks=pytest.mark.xfail('POS_Z' not in {item[0] for item in AXIS_ITEMS}, strict=True,
                                                   reason="the vehicle's Forward setting has no +Z/-Z yet"))])
def test_imported_car_drives_with_its_wheels_on(blender, helpers, length_axis):
    """The issue's test 6: the imported glTF car (rotation Empty with a scale over the body, axle
    meshes of two wheels sharing one mesh, spin keys, non-manifold parts) on flat ground, one
    click, a 2 s bake: on playback every wheel stays on its hub on the chassis (within 1 cm of
    the line its suspension moves it along, and within the travel along it), turns about the
    chassis' axle direction, and the car drives forward upright. Free Bake then leaves the spin
    actions in their muted NLA tracks, their keys as they were."""
    root, body, axles = va.gltf_car(bpy, length_axis=length_axis)
    _ground()
    keys_before = helpers.snapshot()["actions"]
    va.select(bpy, body)
    assert bpy.ops.jakobsen.vehicle_create() == {'FINISHED'}
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 48
    hubs, left = _gltf_expectations(length_axis)
    wheels = [bpy.data.objects[name] for name in sorted(hubs)]
    rest = np.array(body.matrix_world)
    rest_inv = np.linalg.inv(rest)
    on_chassis = {w.name: rest_inv @ np.r_[hubs[w.name], 1.0] for w in wheels}
    up_on_chassis = rest_inv[:3, :3] @ [0.0, 0.0, 1.0]
    left_on_chassis = rest_inv[:3, :3] @ left
    travel = body.jakobsen.vehicle.front_suspension_travel
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    forward = va.car_to_world(length_axis) @ [0.0, -1.0, 0.0]
    worst_off_line, worst_along = 0.0, (0.0, 0.0)
    for frame in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(frame)
        chassis = np.array(body.matrix_world)
        up = chassis[:3, :3] @ up_on_chassis
        up /= np.linalg.norm(up)
        axle = chassis[:3, :3] @ left_on_chassis
        assert up[2] > math.cos(math.radians(10)), f"frame {frame}: the car tilts"
        for w in wheels:
            m = np.array(w.matrix_world)
            d = m[:3, 3] - (chassis @ on_chassis[w.name])[:3]
            along = float(d @ up)
            worst_off_line = max(worst_off_line, float(np.linalg.norm(d - along * up)))
            worst_along = (min(worst_along[0], along), max(worst_along[1], along))
            assert _angle(m[:3, 2], axle) < math.radians(2), f"frame {frame}: '{w.name}' off its axle"
    assert worst_off_line < 0.01, f"a wheel left its hub by {worst_off_line * 1000:.1f} mm"
    assert -0.01 < worst_along[0] and worst_along[1] < travel + 0.01
    moved = (np.array(body.matrix_world)[:3, 3] - rest[:3, 3]) @ forward
    assert moved > 3.0, f"the car drove {moved:.2f} m forward in 2 s"
    va.select(bpy, body, *wheels)
    assert bpy.ops.jakobsen.free_bake() == {'FINISHED'}
    assert helpers.snapshot()["actions"] == keys_before
    for w in wheels:
        assert w.animation_data.action is None and w.animation_data.nla_tracks[0].mute


def test_create_vehicle_is_one_undo_step():
    from jakobsen_physics.operators.vehicle import JAKOBSEN_OT_vehicle_create, JAKOBSEN_OT_vehicle_hitch

    for op in (JAKOBSEN_OT_vehicle_create, JAKOBSEN_OT_vehicle_hitch):
        assert op.bl_options == {'REGISTER', 'UNDO'}


# -- bad selections: a message naming the objects, nothing changed -----------------------------

def _primitive(bpy_):
    chassis, wheels = va.primitive_car(bpy_)
    return chassis, wheels


def _no_active(chassis, wheels):
    va.select(bpy, None, *wheels)
    bpy.context.view_layer.objects.active = None
    return {}, "Make the chassis \\(a mesh\\) the active object"


def _empty_active(chassis, wheels):
    empty = bpy.data.objects.new("Marker", None)
    bpy.context.scene.collection.objects.link(empty)
    va.select(bpy, empty, *wheels)
    return {}, "Make the chassis"


def _no_wheels(chassis, wheels):
    va.select(bpy, chassis)
    return {}, "no wheels: select the wheels of chassis 'Chassis'.*no child meshes"


def _flat_wheel(chassis, wheels):
    bpy.ops.mesh.primitive_circle_add(vertices=24, radius=0.33, fill_type='NGON', location=(0.8, -1.4, 0.33),
                                      rotation=(0, math.pi / 2, 0))
    disc = bpy.context.object
    disc.name = "Disc"
    va.select(bpy, chassis, *wheels[:3], disc)
    return {}, "wheel 'Disc'.*no volume"


def _single_vertex_wheel(chassis, wheels):
    mesh = bpy.data.meshes.new("Dot")
    mesh.from_pydata([(0.8, 1.4, 0.3)], [], [])
    dot = bpy.data.objects.new("Dot", mesh)
    bpy.context.scene.collection.objects.link(dot)
    va.select(bpy, chassis, *wheels, dot)
    return {}, "wheel 'Dot'.*only 1 vertex"


def _far_wheel(chassis, wheels):
    wheels[3].location.x += 30.0
    bpy.context.view_layer.update()
    va.select(bpy, chassis, *wheels)
    return {}, "wheel 'Wheel.RR' is 2.*m from chassis 'Chassis', farther than the chassis' size"


def _chassis_as_wheel(chassis, wheels):
    va.select(bpy, chassis, *wheels)
    return {"wheels": ",".join(["Chassis"] + [w.name for w in wheels])}, "'Chassis' is the chassis and cannot be"


def _wheel_twice(chassis, wheels):
    va.select(bpy, chassis, *wheels)
    return {"wheels": ",".join([w.name for w in wheels] + ["Wheel.FL"])}, "wheel 'Wheel.FL' is given twice"


def _chassis_copy_as_wheel(chassis, wheels):
    copy = bpy.data.objects.new("Chassis Copy", chassis.data)
    bpy.context.scene.collection.objects.link(copy)
    copy.matrix_world = chassis.matrix_world
    va.select(bpy, chassis, *wheels, copy)
    return {}, "'Chassis Copy' shares its mesh with chassis 'Chassis'"


def _two_wheels(chassis, wheels):
    va.select(bpy, chassis, wheels[0], wheels[2])
    return {}, "chassis 'Chassis' has 2 wheels \\(wheel 'Wheel.FL', wheel 'Wheel.RL'\\); a vehicle needs at least 3"


def _crooked_axle(chassis, wheels):
    wheels[1].rotation_euler = (0.0, math.pi / 2, math.pi / 2)  # its axle along Y: not a wheel of this car
    bpy.context.view_layer.update()
    va.select(bpy, chassis, *wheels)
    return {}, "axles are not parallel \\(wheel 'Wheel.FR''s is 90 degrees off wheel 'Wheel.FL''s\\)"


def _hidden_wheel(chassis, wheels):
    wheels[2].hide_set(True)
    va.select(bpy, chassis, *wheels[:2], wheels[3])
    return {"wheels": ",".join(w.name for w in wheels)}, "'Wheel.RL' is hidden"


def _not_a_mesh(chassis, wheels):
    lamp = bpy.data.objects.new("Lamp", bpy.data.lights.new("Lamp", 'POINT'))
    bpy.context.scene.collection.objects.link(lamp)
    va.select(bpy, chassis, *wheels, lamp)
    return {}, "'Lamp' is not a mesh"


def _children_that_are_not_wheels(chassis, wheels):
    for w in wheels:
        bpy.data.objects.remove(w)
    bpy.context.view_layer.update()
    child = va.mesh_object(bpy, "Spoiler", *va.box((0, 2.0, 1.5), (0.8, 0.1, 0.05)))
    child.parent = chassis
    child.matrix_parent_inverse = chassis.matrix_world.inverted()
    bpy.context.view_layer.update()
    va.select(bpy, chassis)
    return {}, "no wheels.*its children 'Spoiler' do not look like wheels"


def _flat_wheels(chassis, wheels):
    for w in wheels:  # Add > Cylinder left as it comes: its axle straight up
        w.rotation_euler = (0.0, 0.0, 0.0)
    bpy.context.view_layer.update()
    va.select(bpy, chassis, *wheels)
    return {}, ("wheel 'Wheel.FL', wheel 'Wheel.FR', wheel 'Wheel.RL', wheel 'Wheel.RR' lie flat: their axles point "
                "straight up.*rotate them 90 degrees.*level, across the car")


def _flat_wheel_tipped(chassis, wheels):
    wheels[2].rotation_euler = (0.3, 0.0, 0.0)  # Add > Cylinder tipped by 17 degrees: still lying flat
    bpy.context.view_layer.update()
    va.select(bpy, chassis, *wheels)
    return {}, ("wheel 'Wheel.RL' lies flat: its axle points up, within 17 degrees of vertical; .*rotate it 90 "
                "degrees")


def _copying_modifier(kind):
    def case(chassis, wheels):
        # The left wheels modelled, the right ones a modifier's copies (not in the mesh).
        for w in (wheels[0], wheels[2]):
            w.modifiers.new(kind.title(), kind)
        va.select(bpy, chassis, wheels[0], wheels[2], wheels[1])
        return {}, f"wheel 'Wheel.FL' has a {kind.title()} modifier \\('{kind.title()}'\\).*apply it first"
    case.__name__ = f"_{kind.lower()}_modifier_on_a_wheel"
    return case


def _wheels_on_one_side(chassis, wheels):
    middle = wheels[0].copy()
    middle.data = wheels[0].data.copy()
    middle.name = "Wheel.ML"
    bpy.context.scene.collection.objects.link(middle)
    middle.location.y = 0.0
    bpy.context.view_layer.update()
    va.select(bpy, chassis, wheels[0], middle, wheels[2])
    return {}, "the wheels of chassis 'Chassis' \\(.*\\) all lie on its left side; select the wheels of both sides"


def _wheel_active(chassis, wheels):
    va.select(bpy, wheels[0], chassis, *wheels[1:])
    return {}, ("the active object 'Wheel.FL' looks like a wheel, and 'Chassis' does not; make the body the "
                "active object")


def _wheel_active_with_one_mesh(chassis, wheels):
    # The wheels sharing one mesh, as an imported car's do: the others share the active one's
    # mesh (it was refused as "'Wheel.FR', ... shares its mesh with chassis 'Wheel.FL'").
    for w in wheels[1:]:
        w.data = wheels[0].data
    va.select(bpy, wheels[0], chassis, *wheels[1:])
    return {}, ("the active object 'Wheel.FL' looks like a wheel \\('Wheel.FR', 'Wheel.RL', 'Wheel.RR' share its "
                "mesh with it\\); make the body the active object")


def _child_wheel_active(chassis, wheels):
    for w in wheels:
        w.parent = chassis
        w.matrix_parent_inverse = chassis.matrix_world.inverted()
    bpy.context.view_layer.update()
    va.select(bpy, wheels[0])
    return {}, "the active object 'Wheel.FL' looks like a wheel \\(of 'Chassis'\\?\\); make the body the active object"


def _baked(chassis, wheels):
    chassis.jakobsen.enabled = True
    chassis.jakobsen.type = 'RIGID_BODY'
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 3
    assert bpy.ops.jakobsen.bake() == {'FINISHED'}
    va.select(bpy, chassis, *wheels)
    return {}, "'Chassis' has a bake, which moves it on playback; free it first"


def _box_as_wheel(chassis, wheels):
    bpy.ops.mesh.primitive_cube_add(size=0.5, location=(0.0, 0.0, 3.0))
    bpy.context.object.name = "Box"
    va.select(bpy, chassis, *wheels, bpy.context.object)
    return {}, "'Box' is not round about an axle"


def _wheels_of_another_vehicle(chassis, wheels):
    va.select(bpy, chassis, *wheels)
    assert bpy.ops.jakobsen.vehicle_create() == {'FINISHED'}
    other = bpy.data.objects.new("Chassis2", chassis.data.copy())
    bpy.context.scene.collection.objects.link(other)
    other.matrix_world = chassis.matrix_world
    bpy.context.view_layer.update()
    va.select(bpy, other, *wheels)
    return {}, "'Wheel.FL' \\(of vehicle 'Chassis', by '.*'\\).*already a wheel of another vehicle"


BAD_SELECTIONS = [_box_as_wheel, _wheels_of_another_vehicle,
                  _no_active, _empty_active, _no_wheels, _flat_wheel, _single_vertex_wheel, _far_wheel,
                  _chassis_as_wheel, _wheel_twice, _chassis_copy_as_wheel, _two_wheels, _crooked_axle,
                  _hidden_wheel, _not_a_mesh, _children_that_are_not_wheels, _baked, _flat_wheels, _flat_wheel_tipped,
                  _copying_modifier('MIRROR'), _copying_modifier('ARRAY'), _wheels_on_one_side, _wheel_active,
                  _wheel_active_with_one_mesh, _child_wheel_active]


@pytest.mark.blender
@pytest.mark.parametrize("case", BAD_SELECTIONS, ids=[c.__name__.strip("_") for c in BAD_SELECTIONS])
def test_bad_selection_is_refused_and_changes_nothing(blender, helpers, case):
    """Each selection Create Vehicle cannot rig: an ERROR naming the objects, and the scene exactly
    as it was (objects, names, parents, matrices, meshes, actions, selection)."""
    chassis, wheels = _primitive(bpy)
    options, message = case(chassis, wheels)
    before = _state(helpers)
    with pytest.raises(RuntimeError, match=f"Create Vehicle: .*{message}.*nothing was changed"):
        bpy.ops.jakobsen.vehicle_create(**options)
    _assert_same(_state(helpers), before)


@pytest.mark.blender
def test_bad_selection_of_the_imported_car_changes_nothing(blender, helpers):
    """The glTF car with one of its axle meshes flattened to a disc: refused before the other
    axle is split, unparented or has its spin stashed."""
    root, body, axles = va.gltf_car(bpy, length_axis="X")
    co = np.empty(len(axles[0].data.vertices) * 3, np.float32)
    axles[1].data = axles[1].data.copy()
    axles[1].data.vertices.foreach_get("co", co)
    co = co.reshape(-1, 3)
    co[:, 1] = 0.0  # the axle's two wheels flattened to the file's ground plane
    axles[1].data.vertices.foreach_set("co", co.ravel())
    axles[1].data.update()
    va.select(bpy, body, *axles)
    before = _state(helpers)
    with pytest.raises(RuntimeError, match="wheel 'RearAxle' \\(its part 1 of 2, .*\\).*no volume"):
        bpy.ops.jakobsen.vehicle_create()
    _assert_same(_state(helpers), before)


# -- what the report says -----------------------------------------------------------------------------

def _create(capfd) -> str:
    """Create Vehicle on the selection (it must finish); what it reported (Blender prints reports)."""
    capfd.readouterr()
    assert bpy.ops.jakobsen.vehicle_create() == {'FINISHED'}
    out, err = capfd.readouterr()
    return out + err


@pytest.mark.blender
def test_wheels_rolling_along_the_body_are_warned_about(blender, capfd):
    """Wheels turned so that their axles run along the body (4.4 m) rig a car that drives across
    its 1.8 m width: the report warns, naming the chassis; a car built right gets no such warning."""
    chassis, wheels = va.primitive_car(bpy)
    va.select(bpy, chassis, *wheels)
    assert "sideways" not in _create(capfd)
    chassis, wheels = va.primitive_car(bpy)
    for w in wheels:
        w.rotation_euler = (math.pi / 2, 0.0, 0.0)  # the axle along Y, the body's length
    bpy.context.view_layer.update()
    va.select(bpy, chassis, *wheels)
    said = _create(capfd)
    assert f"Warning: Create Vehicle: chassis '{chassis.name}': its wheels' axles run along its length (4.4 m; it is " \
           "1.8 m across them), so it will drive sideways" in said, said
    assert chassis.jakobsen.vehicle.forward_axis in ('NEG_X', 'POS_X')


@pytest.mark.blender
def test_a_toy_car_reports_its_mass_in_significant_figures(blender, capfd):
    """A car a twentieth of the size (a 22 cm toy): the masses in the report are the chassis' and
    the car's, not '0 kg'."""
    from mathutils import Matrix

    chassis, wheels = va.primitive_car(bpy)
    for obj in (chassis, *wheels):
        obj.matrix_world = Matrix.Scale(0.05, 4) @ obj.matrix_world
    bpy.context.view_layer.update()
    va.select(bpy, chassis, *wheels)
    said = _create(capfd)
    chassis_kg = float(said.split("chassis ", 1)[1].split(" kg")[0])
    total_kg = float(said.split("kg, ", 1)[1].split(" kg in all")[0])
    mass = chassis.jakobsen.rigid_body.mass
    assert 0.01 < mass < 1.0
    assert chassis_kg == pytest.approx(mass, rel=5e-3)
    assert total_kg == pytest.approx(mass + sum(w.jakobsen.rigid_body.mass for w in wheels), rel=5e-3)


@pytest.mark.blender
def test_running_it_again_names_the_settings_it_resets(blender, capfd):
    """Create Vehicle again re-derives the motor, brakes and suspension from the masses; the
    values the user had tuned are named in a warning with their old value (nothing is said when
    nothing was tuned, nor on the first run)."""
    chassis, wheels = va.primitive_car(bpy)
    va.select(bpy, chassis, *wheels)
    assert "replacing" not in _create(capfd)
    v = chassis.jakobsen.vehicle
    torque, stiffness = v.motor_torque, v.rear_suspension_stiffness
    va.select(bpy, chassis, *wheels)
    assert "replacing" not in _create(capfd)
    v.motor_torque = 2 * torque
    v.rear_suspension_stiffness = 12345.0
    va.select(bpy, chassis, *wheels)
    said = _create(capfd)
    assert v.motor_torque == pytest.approx(torque) and v.rear_suspension_stiffness == pytest.approx(stiffness)
    line = next(text for text in said.splitlines() if "replacing" in text)
    assert line.startswith("Warning: Create Vehicle: vehicle 'Chassis': set from the masses again")
    assert f"Motor Torque {2 * torque:,.0f} -> {torque:,.0f}" in line, line
    assert f"Rear Stiffness 12,345 -> {stiffness:,.0f}" in line, line
    assert "Front" not in line and "Brake" not in line, line


# -- Hitch -------------------------------------------------------------------------------------------

def _trailer(length=2.4, gap=0.6):
    """A box trailer behind the primitive car (its front ``gap`` behind the car's rear), two
    cylinder wheels its children."""
    from mathutils import Euler, Matrix

    front = va.BODY[1] / 2 + gap
    trailer = va.mesh_object(bpy, "Trailer", *va.box((0, front + length / 2, 0.75), (0.8, length / 2, 0.35)))
    wheels = []
    for name, x in (("Trailer.L", 0.9), ("Trailer.R", -0.9)):
        bpy.ops.mesh.primitive_cylinder_add(vertices=24, radius=0.3, depth=0.18)
        wheel = bpy.context.object
        wheel.name = name
        turn = Euler((0, math.pi / 2, 0)).to_matrix().to_4x4()
        wheel.matrix_world = Matrix.Translation((x, front + length / 2, 0.3)) @ turn
        wheel.parent = trailer
        wheel.matrix_parent_inverse = trailer.matrix_world.inverted()
        wheels.append(wheel)
    bpy.context.view_layer.update()
    return trailer, wheels, front


@pytest.mark.blender
def test_hitch_a_trailer(blender, helpers):
    """Hitch: the trailer (two wheels, its children) becomes a vehicle without a motor, and a
    Ball and Socket connector joins it to the car at the middle of the gap between the car's
    rear and the trailer's front, on the car's centre line."""
    chassis, wheels = va.primitive_car(bpy)
    va.select(bpy, chassis, *wheels)
    assert bpy.ops.jakobsen.vehicle_create() == {'FINISHED'}
    trailer, trailer_wheels, front = _trailer()
    va.select(bpy, chassis, trailer)
    assert bpy.ops.jakobsen.vehicle_hitch() == {'FINISHED'}
    v = trailer.jakobsen.vehicle
    assert v.enabled and v.drive == 'NONE' and v.forward_axis == 'NEG_Y'
    for w in trailer_wheels:
        assert w.parent is None and w.jakobsen.rigid_body.collision_shape == 'CYLINDER'
        assert bpy.data.objects[f"{w.name} Suspension"].jakobsen.connector.object_a == trailer
    hitch = bpy.data.objects["Chassis Hitch"]
    c = hitch.jakobsen.connector
    assert c.connector_type == 'BALL_SOCKET' and c.object_a == chassis and c.object_b == trailer
    assert c.ignore_collisions
    centre = np.array(chassis.matrix_world.translation)
    expected = np.array([centre[0], (va.BODY[1] / 2 + front) / 2, centre[2]])
    np.testing.assert_allclose(np.array(hitch.matrix_world.translation), expected, atol=1e-5)
    # Hitching again moves the same connector; no second one.
    va.select(bpy, chassis, trailer)
    assert bpy.ops.jakobsen.vehicle_hitch() == {'FINISHED'}
    assert sum(1 for o in bpy.data.objects if o.name.startswith("Chassis Hitch")) == 1


@pytest.mark.blender
def test_hitch_refuses_what_it_cannot_hitch(blender, helpers):
    """Hitch with a car that is not a vehicle, or a trailer in front of the car: an ERROR naming
    them, nothing changed."""
    chassis, wheels = va.primitive_car(bpy)
    trailer, _, _ = _trailer()
    va.select(bpy, chassis, trailer)
    before = _state(helpers)
    with pytest.raises(RuntimeError, match="Hitch Trailer: .*'Chassis' is not a vehicle"):
        bpy.ops.jakobsen.vehicle_hitch()
    _assert_same(_state(helpers), before)
    va.select(bpy, chassis, *wheels)
    assert bpy.ops.jakobsen.vehicle_create() == {'FINISHED'}
    trailer.location.y -= 12.0  # now in front of the car
    bpy.context.view_layer.update()
    va.select(bpy, chassis, trailer)
    before = _state(helpers)
    with pytest.raises(RuntimeError, match="trailer 'Trailer' is not behind car 'Chassis'"):
        bpy.ops.jakobsen.vehicle_hitch()
    _assert_same(_state(helpers), before)
