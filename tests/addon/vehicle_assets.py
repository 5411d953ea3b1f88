"""Synthetic vehicles for the Create Vehicle tests: wheel geometry as numpy arrays (tyres, rims,
bolts; no Blender needed) and scenes built in Blender: a car from primitives, and a copy of the
structure a public glTF car has once imported (a Y-up-to-Z-up rotation Empty with a scale
parenting the body; each axle one mesh holding both wheels, tyre and rim separate loose parts;
the two axles sharing one mesh datablock; spin keys on the axles; non-manifold loose parts on
the body)."""

from __future__ import annotations

import math

import numpy as np

# A car of real proportions (metres).
RADIUS = 0.33
WIDTH = 0.22
WHEELBASE = 2.8
TRACK = 1.6
BODY = (1.8, 4.4, 1.1)  # width, length, height
CLEARANCE = 0.2  # from the ground to the body's underside


# -- geometry (numpy) -------------------------------------------------------------------------------

def rotation(axis, angle: float) -> np.ndarray:
    """A rotation matrix (3, 3) about ``axis`` by ``angle`` (rad)."""
    a = np.asarray(axis, dtype=np.float64)
    a = a / np.linalg.norm(a)
    k = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + math.sin(angle) * k + (1 - math.cos(angle)) * k @ k


def random_rotation(rng) -> np.ndarray:
    q = rng.normal(size=4)
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def revolve(profile, segments: int, phase: float = 0.0):
    """A closed surface of revolution about Z: ``profile`` (p, 2) of (radius, z) points, a closed
    loop; returns vertices (segments * p, 3) and quads (segments * p, 4)."""
    prof = np.asarray(profile, dtype=np.float64)
    p = len(prof)
    angles = phase + np.arange(segments) * 2 * np.pi / segments
    v = np.stack([np.outer(np.cos(angles), prof[:, 0]), np.outer(np.sin(angles), prof[:, 0]),
                  np.broadcast_to(prof[:, 1], (segments, p))], axis=2).reshape(-1, 3)
    i, j = np.meshgrid(np.arange(segments), np.arange(p), indexing="ij")
    a = i * p + j
    b = ((i + 1) % segments) * p + j
    c = ((i + 1) % segments) * p + (j + 1) % p
    d = i * p + (j + 1) % p
    return v, np.stack([a, b, c, d], axis=2).reshape(-1, 4)


def cylinder(radius: float, width: float, segments: int, phase: float = 0.0):
    """A closed cylinder about Z centred on the origin: vertices, faces (a list: quads and two n-gons)."""
    angles = phase + np.arange(segments) * 2 * np.pi / segments
    ring = np.c_[radius * np.cos(angles), radius * np.sin(angles)]
    v = np.r_[np.c_[ring, np.full(segments, -width / 2)], np.c_[ring, np.full(segments, width / 2)]]
    k = np.arange(segments)
    sides = np.stack([k, (k + 1) % segments, (k + 1) % segments + segments, k + segments], axis=1)
    faces = [list(f) for f in sides] + [list(k[::-1]), list(k + segments)]
    return v, faces


def box(centre, half):
    signs = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=np.float64)
    v = np.asarray(centre, dtype=np.float64) + signs * np.asarray(half, dtype=np.float64)
    faces = [[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1], [2, 3, 7, 6], [0, 2, 6, 4], [1, 5, 7, 3]]
    return v, faces


def join(parts):
    """One mesh (vertices, faces list) from several (vertices, faces) parts: loose parts of it."""
    verts, faces, offset = [], [], 0
    for v, f in parts:
        verts.append(np.asarray(v, dtype=np.float64))
        faces.extend([[int(i) + offset for i in face] for face in f])
        offset += len(v)
    return np.concatenate(verts), faces


def wheel_parts(radius=RADIUS, width=WIDTH, segments=24, *, bolts=5, valve=True, phase=0.0):
    """One wheel about Z centred on the origin, as separate loose parts: a tyre (a closed tube of
    a rounded profile), a rim inside it, ``bolts`` wheel bolts on the outer (+Z) face and a valve
    stem. Returns a list of (vertices, faces)."""
    r, w = radius, width
    profile = [(0.72 * r, -0.5 * w), (0.93 * r, -0.5 * w), (r, -0.35 * w), (r, 0.0), (r, 0.35 * w),
               (0.93 * r, 0.5 * w), (0.72 * r, 0.5 * w), (0.72 * r, 0.0)]
    tyre = revolve(profile, segments, phase)
    parts = [(tyre[0], tyre[1].tolist()), cylinder(0.71 * r, 0.8 * w, segments, phase)]
    for k in range(bolts):
        a = phase + k * 2 * np.pi / bolts
        parts.append(box((0.2 * r * math.cos(a), 0.2 * r * math.sin(a), 0.42 * w), (0.02 * r, 0.02 * r, 0.04 * w)))
    if valve:
        parts.append(box((0.68 * r * math.cos(phase), 0.68 * r * math.sin(phase), 0.3 * w),
                         (0.01 * r, 0.01 * r, 0.12 * w)))
    return parts


def placed(parts, rot: np.ndarray, offset):
    return [(v @ rot.T + np.asarray(offset, dtype=np.float64), f) for v, f in parts]


# -- Blender scenes -----------------------------------------------------------------------------------

def mesh_object(bpy, name: str, verts, faces, *, collection=None, material: str | None = None):
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(np.asarray(verts, dtype=np.float64).tolist(), [], [list(map(int, f)) for f in faces])
    mesh.update()
    mesh.uv_layers.new(name="UVMap")
    if material:
        mesh.materials.append(bpy.data.materials.get(material) or bpy.data.materials.new(material))
    obj = bpy.data.objects.new(name, mesh)
    (collection or bpy.context.scene.collection).objects.link(obj)
    return obj


def car_body(width=BODY[0], length=BODY[1], height=BODY[2], *, extras=False):
    """A car's body about its origin, length along Y, as (vertices, faces): a box with a cabin;
    with ``extras`` non-manifold loose parts too (a fin of three faces on one edge, a loose
    triangle, a stray edge's worth of vertices)."""
    parts = [box((0, 0, 0), (width / 2, length / 2, height * 0.3)),
             box((0, 0.3, height * 0.5), (width * 0.42, length * 0.25, height * 0.2))]
    if extras:
        fin = np.array([[0, -length * 0.45, height * 0.3], [0, -length * 0.3, height * 0.3],
                        [0, -length * 0.3, height * 0.6], [0.2, -length * 0.3, height * 0.5],
                        [-0.2, -length * 0.3, height * 0.5]])
        parts.append((fin, [[0, 1, 2], [0, 1, 3], [0, 1, 4]]))  # edge 0-1 in three faces
        parts.append((np.array([[0.1, 0.1, 0.0], [0.3, 0.1, 0.0], [0.1, 0.3, 0.05]]), [[0, 1, 2]]))
    return join(parts)


def primitive_car(bpy, *, yaw: float = 0.0, radius: float = RADIUS, width: float = WIDTH,
                  wheelbase: float = WHEELBASE, track: float = TRACK, segments: int = 32, location=(0, 0, 0),
                  mirror_right: bool = False):
    """A car from Blender's primitives: a box chassis (length along its local Y, front at -Y) and
    four cylinder wheels (Add > Cylinder, turned so that their axles lie across the car), the
    whole turned by ``yaw`` about Z; with ``mirror_right`` the right wheels are mirror images (a
    negative scale, as a modeller's mirrored copy has). Returns (chassis, [wheels FL, FR, RL, RR])."""
    from mathutils import Euler, Matrix, Vector

    turn = Matrix.Translation(Vector(location)) @ Matrix.Rotation(yaw, 4, 'Z')
    height = BODY[2]
    bpy.ops.mesh.primitive_cube_add(size=1.0)
    chassis = bpy.context.object
    chassis.name = chassis.data.name = "Chassis"
    chassis.scale = (BODY[0], BODY[1], height * 0.6)
    chassis.matrix_world = turn @ Matrix.Translation((0, 0, radius + CLEARANCE + height * 0.3)) @ \
        Matrix.Diagonal((BODY[0], BODY[1], height * 0.6, 1.0))
    wheels = []
    for name, y, x in (("Wheel.FL", -wheelbase / 2, track / 2), ("Wheel.FR", -wheelbase / 2, -track / 2),
                       ("Wheel.RL", wheelbase / 2, track / 2), ("Wheel.RR", wheelbase / 2, -track / 2)):
        bpy.ops.mesh.primitive_cylinder_add(vertices=segments, radius=radius, depth=width)
        wheel = bpy.context.object
        wheel.name = wheel.data.name = name
        mirror = Matrix.Diagonal((-1.0, 1.0, 1.0, 1.0)) if mirror_right and x < 0 else Matrix.Identity(4)
        wheel.matrix_world = (turn @ Matrix.Translation((x, y, radius))
                              @ Euler((0, math.pi / 2, 0)).to_matrix().to_4x4() @ mirror)
        wheels.append(wheel)
    bpy.context.view_layer.update()
    return chassis, wheels


def select(bpy, active, *others) -> None:
    for obj in bpy.context.view_layer.objects:
        obj.select_set(False)
    for obj in (active, *others):
        if obj is not None:
            obj.select_set(True)
    bpy.context.view_layer.objects.active = active


# The car's own frame (x to its left, y to its back, z up) -> the glTF file's axes (Y up): the
# length along Z with the front at +Z (glTF's convention), or along X with the front at -X.
FILE_AXES = {"Z": np.array([[1.0, 0, 0], [0, 0, 1.0], [0, -1.0, 0]]),
             "X": np.array([[0, 1.0, 0], [0, 0, 1.0], [1.0, 0, 0]])}
# The import's Empty turns the file's Y up into Blender's Z up.
Y_UP_TO_Z_UP = rotation((1, 0, 0), math.pi / 2)


def car_to_world(length_axis: str) -> np.ndarray:
    """(3, 3): the car's frame (x left, y back, z up) -> Blender's world, for ``gltf_car``."""
    return Y_UP_TO_Z_UP @ FILE_AXES[length_axis]


def car_hubs() -> dict[str, np.ndarray]:
    """Where the wheels' hubs are in the car's frame, by position (FL: front left, ...)."""
    return {pos: np.array([side * TRACK / 2, end * WHEELBASE / 2, RADIUS])
            for pos, side, end in (("FL", 1, -1), ("FR", -1, -1), ("RL", 1, 1), ("RR", -1, 1))}


def gltf_car(bpy, *, length_axis: str = "Z", scale: float = 0.01, segments: int = 24, spin: bool = True,
             decoys: bool = True, shared_action: bool = False, frames=(1, 48)):
    """The structure of an imported glTF car: an Empty "Sketchfab_model" rotated 90 degrees about X
    and scaled by ``scale`` (the file's Y-up centimetres to Blender's Z-up metres), the body
    its child in the file's own axes (Y up; the length along local Z, glTF's front at +Z, or with
    ``length_axis`` "X" along local X, front at -X), two axle objects children of the body sharing
    one mesh that holds both wheels of an axle (tyre, rim, bolts: separate loose parts), spin keys
    on each axle (their own actions), non-manifold loose parts on the body; with ``decoys`` more
    children of the body that are not wheels: a steering wheel (round, in the cabin), a mirror
    (a box) and a headlight (round, its axis along the car); with ``shared_action`` both axles spin
    by one action "AxlesAction" (on Blender 4.4 and later in a slot each, as importers make them).
    Returns (root, body, [front axle, rear axle])."""
    unit = 1.0 / scale
    root = bpy.data.objects.new("Sketchfab_model", None)
    bpy.context.scene.collection.objects.link(root)
    root.rotation_euler = (math.pi / 2, 0.0, 0.0)
    root.scale = (scale, scale, scale)
    to_file = FILE_AXES[length_axis]
    verts, faces = car_body(extras=True)
    verts = verts + np.array([0.0, 0.0, RADIUS + CLEARANCE + BODY[2] * 0.3])
    body = mesh_object(bpy, "Body", verts @ to_file.T * unit, faces, material="Paint")
    body.parent = root
    wheel_axle = rotation((0, 1, 0), math.pi / 2)  # wheel Z (its axle) -> car x (across)
    parts = []
    for side in (1.0, -1.0):
        parts += placed(wheel_parts(segments=segments), wheel_axle, (side * TRACK / 2, 0.0, 0.0))
    axle_verts, axle_faces = join(parts)
    axle_mesh = None
    axles = []
    for name, y in (("FrontAxle", -WHEELBASE / 2), ("RearAxle", WHEELBASE / 2)):
        if axle_mesh is None:
            obj = mesh_object(bpy, name, axle_verts @ to_file.T * unit, axle_faces, material="Tyre")
            axle_mesh = obj.data
            axle_mesh.name = "Axle"
        else:
            obj = bpy.data.objects.new(name, axle_mesh)
            bpy.context.scene.collection.objects.link(obj)
        obj.parent = body
        # Where the axle is, in the file's axes (the car's y is the length; front is -y in car terms).
        obj.location = tuple(to_file @ np.array([0.0, y, RADIUS]) * unit)
        axles.append(obj)
    if decoys:
        for name, (v, f) in (
                ("SteeringWheel", cylinder(0.19, 0.04, 24)),
                ("Mirror", box((0.0, 0.0, 0.0), (0.03, 0.08, 0.06))),
                ("Headlight", cylinder(0.09, 0.05, 16))):
            turn, where = {
                "SteeringWheel": (rotation((1, 0, 0), math.radians(65)), (0.4, -0.5, 1.15)),
                "Mirror": (np.eye(3), (BODY[0] / 2 + 0.05, -0.6, 1.0)),
                "Headlight": (rotation((1, 0, 0), math.pi / 2), (0.6, -BODY[1] / 2, 0.75)),
            }[name]
            obj = mesh_object(bpy, name, (v @ turn.T + np.asarray(where)) @ to_file.T * unit, f)
            obj.parent = body
    if spin:
        first, last = frames
        slotted = "slots" in bpy.types.Action.bl_rna.properties
        for k, obj in enumerate(axles):
            if shared_action and k > 0:
                obj.animation_data_create()
                obj.animation_data.action = axles[0].animation_data.action
                if not slotted:
                    continue  # Blender 4.2: one action, the same keys for both
                obj.animation_data.action_slot = obj.animation_data.action.slots.new(id_type='OBJECT', name=obj.name)
            # The axle's own X in the file is the car's x for length "Z"; turn about it.
            index = 0 if length_axis == "Z" else 2
            obj.rotation_euler = (0.0, 0.0, 0.0)
            obj.keyframe_insert("rotation_euler", index=index, frame=first)
            angle = [0.0, 0.0, 0.0]
            angle[index] = -4 * math.pi
            obj.rotation_euler = angle
            obj.keyframe_insert("rotation_euler", index=index, frame=last)
            obj.animation_data.action.name = "AxlesAction" if shared_action else f"{obj.name}Action"
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = frames
    scene.frame_set(frames[0])
    bpy.context.view_layer.update()
    return root, body, axles
