"""A car and a trailer as a user models them, rigged with the add-on's own one-click operators.

``car(...)`` builds a chassis (a body with a cabin on top, one mesh of two materials) and four
separate wheel meshes, the front of the car at the chassis' local -Y (Blender's convention: the
Front view looks at it), then selects the wheels and the chassis (active) and runs
``bpy.ops.jakobsen.vehicle_create()``, exactly what *Create Vehicle* does in the sidebar: it
finds the wheels' hubs and axles from their vertices, adds the Wheel Suspension connectors, sets
the masses and the suspension. ``trailer(...)`` builds a box on one axle, its wheels its children,
and ``hitch(car, trailer)`` runs ``bpy.ops.jakobsen.vehicle_hitch()`` (*Hitch Trailer*).

Everything after that is the Vehicle settings on the chassis (``chassis.jakobsen.vehicle``), as
a user sets them in Properties > Physics > Vehicle.
"""

from __future__ import annotations

import math

import numpy as np

import common

WHEEL_RADIUS = 0.40
WHEEL_WIDTH = 0.28
TRACK = 1.6             # between the wheels' centres across the car
WHEELBASE = 2.1
BODY = (1.25, 3.0, 0.45)   # width, length, height of the body, m
BODY_CLEARANCE = 0.50      # the body's underside above the ground
CABIN = (1.05, 1.35, 0.42)
CABIN_BACK = 0.15          # the cabin's centre this far behind the body's centre
GAP = 0.01                 # the wheels start this far above the ground (nothing starts inside it)


def _boxes(parts):
    """Vertices and faces of several boxes ((centre, size) each) in one mesh, and each face's part."""
    vertices, faces, part_of = [], [], []
    for k, (centre, size) in enumerate(parts):
        v, f = common.box(size)
        faces += [[i + len(vertices) for i in face] for face in f]
        vertices += (v + np.asarray(centre)).tolist()
        part_of += [k] * len(f)
    return np.array(vertices), faces, part_of


def wheel_mesh(radius=WHEEL_RADIUS, width=WHEEL_WIDTH, segments: int = 24, sectors: int = 4):
    """A closed cylinder along local Z, its caps fans of triangles, and each face's material index
    (0 tyre, 1 hub, 2 hub marks: the spin shows)."""
    angles = np.linspace(0.0, 2 * math.pi, segments, endpoint=False)
    ring = np.stack([np.cos(angles), np.sin(angles)], axis=1) * radius
    h = width / 2
    vertices = np.concatenate([np.c_[ring, np.full(segments, -h)], np.c_[ring, np.full(segments, h)],
                               [[0.0, 0.0, -h], [0.0, 0.0, h]]])
    c0, c1 = 2 * segments, 2 * segments + 1
    faces, materials = [], []
    for k in range(segments):
        n = (k + 1) % segments
        faces.append([k, n, segments + n, segments + k])
        materials.append(0)
    for k in range(segments):
        n = (k + 1) % segments
        mark = 2 if (k * sectors // segments) % 2 == 0 else 1
        faces.append([c0, n, k])                         # cap at -Z, facing -Z
        faces.append([c1, segments + k, segments + n])   # cap at +Z, facing +Z
        materials += [mark, mark]
    return vertices, faces, materials


def _wheel_materials():
    import bpy

    found = bpy.data.materials.get("Tyre")
    if found is not None:
        return found, bpy.data.materials["Hub"], bpy.data.materials["Hub Mark"]
    return (common.material("Tyre", (0.10, 0.10, 0.11)), common.material("Hub", (0.75, 0.76, 0.78)),
            common.material("Hub Mark", (0.95, 0.75, 0.15)))


def wheel(name: str, world, *, radius=WHEEL_RADIUS, width=WHEEL_WIDTH):
    """A wheel object, its mesh a cylinder about the object's local Z, placed by ``world`` (4x4:
    where the wheel's centre is and its Z along the axle)."""
    from mathutils import Matrix

    vertices, faces, materials = wheel_mesh(radius, width)
    tyre, hub, mark = _wheel_materials()
    obj = common.mesh_object(name, vertices, faces, material=tyre)
    obj.data.materials.append(hub)
    obj.data.materials.append(mark)
    obj.data.polygons.foreach_set("material_index", materials)
    obj.matrix_world = Matrix(np.asarray(world).tolist())
    return obj


def _placement(location, heading: float) -> np.ndarray:
    """(4, 4): the car's own frame (front at -Y, as modelled) turned by ``heading`` about Z (0: the
    front towards world -Y; pi: towards +Y) and moved to ``location`` (on the ground)."""
    c, s = math.cos(heading), math.sin(heading)
    m = np.eye(4)
    m[:3, :3] = [[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]
    m[:3, 3] = location
    return m


def _select(active, *others) -> None:
    import bpy

    for obj in bpy.context.view_layer.objects:
        obj.select_set(False)
    for obj in (active, *others):
        obj.select_set(True)
    bpy.context.view_layer.objects.active = active


def car(name: str, *, location=(0.0, 0.0, 0.0), heading: float = 0.0, paint=(0.78, 0.12, 0.10)):
    """A car standing on the ground at ``location`` (its wheels ``GAP`` above it), its front
    towards ``heading`` (see ``_placement``), rigged by Create Vehicle. Returns (chassis, wheels
    front left, front right, rear left, rear right)."""
    import bpy
    from mathutils import Matrix

    place = _placement(location, heading)
    body_z = BODY_CLEARANCE + BODY[2] / 2
    vertices, faces, part_of = _boxes([((0.0, 0.0, 0.0), BODY),
                                       ((0.0, CABIN_BACK, BODY[2] / 2 + CABIN[2] / 2), CABIN)])
    paint_mat = common.material(f"{name} Paint", paint)
    chassis = common.mesh_object(name, vertices, faces, material=paint_mat)
    chassis.data.materials.append(bpy.data.materials.get("Glass") or common.material("Glass", (0.55, 0.70, 0.80)))
    chassis.data.polygons.foreach_set("material_index", part_of)
    local = np.eye(4)
    local[2, 3] = body_z + GAP
    chassis.matrix_world = Matrix((place @ local).tolist())

    wheels = []
    turn = np.eye(4)
    turn[:3, :3] = [[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]]  # the cylinder's Z along the car's X
    for end, y in (("F", -WHEELBASE / 2), ("R", WHEELBASE / 2)):
        for side, x in (("L", TRACK / 2), ("R", -TRACK / 2)):
            hub = np.eye(4)
            hub[:3, 3] = (x, y, WHEEL_RADIUS + GAP)
            wheels.append(wheel(f"{name} Wheel {end}{side}", place @ hub @ turn))
    bpy.context.view_layer.update()
    _select(chassis, *wheels)
    result = bpy.ops.jakobsen.vehicle_create()
    if result != {'FINISHED'}:
        raise RuntimeError(f"Create Vehicle did not rig '{name}': {result}")
    return chassis, wheels


TRAILER_BOX = (1.2, 1.8, 0.6)
TRAILER_CLEARANCE = 0.45
DRAWBAR = 1.0              # m ahead of the trailer's box
TRAILER_WHEEL_RADIUS = 0.3
TRAILER_TRACK = 1.45


def trailer(name: str, *, location, heading: float = 0.0, colour=(0.85, 0.72, 0.30)):
    """A box trailer on one axle (its two wheels its children, as modelled), centred on
    ``location`` on the ground, its front towards ``heading``. Returns (trailer, wheels)."""
    import bpy
    from mathutils import Matrix

    place = _placement(location, heading)
    vertices, faces, part_of = _boxes([((0.0, 0.0, 0.0), TRAILER_BOX),
                                       ((0.0, -(TRAILER_BOX[1] + DRAWBAR) / 2, 0.18), (0.12, DRAWBAR, 0.1))])
    body = common.mesh_object(name, vertices, faces, material=common.material(f"{name} Paint", colour))
    body.data.materials.append(bpy.data.materials.get("Hub") or _wheel_materials()[1])
    body.data.polygons.foreach_set("material_index", part_of)
    local = np.eye(4)
    local[2, 3] = TRAILER_CLEARANCE + TRAILER_BOX[2] / 2 + GAP
    body.matrix_world = Matrix((place @ local).tolist())
    turn = np.eye(4)
    turn[:3, :3] = [[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]]
    wheels = []
    for side, x in (("L", TRAILER_TRACK / 2), ("R", -TRAILER_TRACK / 2)):
        hub = np.eye(4)
        hub[:3, 3] = (x, 0.15, TRAILER_WHEEL_RADIUS + GAP)
        w = wheel(f"{name} Wheel {side}", place @ hub @ turn, radius=TRAILER_WHEEL_RADIUS, width=0.2)
        w.parent = body
        w.matrix_parent_inverse = body.matrix_world.inverted()
        wheels.append(w)
    bpy.context.view_layer.update()
    return body, wheels


def hitch(chassis, trailer_body):
    """Hitch Trailer with the car active and the trailer selected: the trailer becomes a vehicle
    without a motor, joined to the car by a Ball and Socket. Returns the hitch Empty."""
    import bpy

    _select(chassis, trailer_body)
    result = bpy.ops.jakobsen.vehicle_hitch()
    if result != {'FINISHED'}:
        raise RuntimeError(f"Hitch Trailer did not hitch '{trailer_body.name}': {result}")
    return bpy.data.objects[f"{chassis.name} Hitch"]


def ground_plane(name: str = "Ground", size: float = 200.0, colour=(0.62, 0.66, 0.52)):
    """A flat ground: a large square at z = 0, a Collider with Shape Plane."""
    g = size / 2
    obj = common.mesh_object(name, np.array([[-g, -g, 0.0], [g, -g, 0.0], [g, g, 0.0], [-g, g, 0.0]]),
                             [[0, 1, 2, 3]], material=common.material(name, colour))
    obj.jakobsen.enabled = True
    obj.jakobsen.type = 'COLLIDER'
    obj.jakobsen.collider.shape = 'PLANE'
    obj.jakobsen.collider.friction = 1.0
    return obj


def cone(name: str, location, *, radius: float = 0.18, height: float = 0.5, segments: int = 12):
    """A traffic cone (only seen, not simulated) standing on the ground at ``location``."""
    import bpy

    angles = np.linspace(0.0, 2 * math.pi, segments, endpoint=False)
    base = np.c_[np.cos(angles) * radius, np.sin(angles) * radius, np.zeros(segments)]
    vertices = np.concatenate([base, [[0.0, 0.0, height]]]) + np.asarray(location, float)
    faces = [[k, (k + 1) % segments, segments] for k in range(segments)] + [list(range(segments))[::-1]]
    mat = bpy.data.materials.get("Cone") or common.material("Cone", (0.95, 0.40, 0.08))
    return common.mesh_object(name, vertices, faces, material=mat)


def follow_camera(target, offset, *, lens: float = 35.0):
    """A camera that keeps ``offset`` (world metres) from ``target`` across the ground (Copy
    Location of X and Y, with the offset) and looks at it (Track To): the car stays the same size
    in the picture wherever it drives."""
    location = np.asarray(target.matrix_world.translation) + np.asarray(offset, float)
    cam = common.camera("Camera", location=tuple(location), target=tuple(target.matrix_world.translation), lens=lens)
    cam.location = offset
    follow = cam.constraints.new('COPY_LOCATION')
    follow.target = target
    follow.use_z = False
    follow.use_offset = True
    track = cam.constraints.new('TRACK_TO')
    track.target = target
    track.track_axis, track.up_axis = 'TRACK_NEGATIVE_Z', 'UP_Y'
    return cam
