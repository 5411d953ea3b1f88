"""Build the cloth examples: a tablecloth dropped on a table, a cape on a walking character, a
balloon, a jelly cube and a sheet torn apart.

Each is set up as a user sets it up in Blender, with the add-on's panels only:

``tablecloth.blend``
    A table (one mesh: a top and four legs, a Collider with Shape Mesh, so the cloth meets its
    faces, not a box fitted round the legs) and a square tablecloth (a 48 x 48 vertex grid, 1.7 m
    across, on a 1.1 m top) dropped flat from ``DROP`` above the top: it lands, and the 0.3 m
    overhang falls and drapes over the edges and corners.

``cape.blend``
    A character (a torso, hips, legs, arms and a head in one mesh, skinned to an armature by an
    Armature modifier and vertex groups weighted by hand so they are the same on every build)
    that walks forward, turns and shrugs its shoulders over the frame range (keyed bones and a
    keyed armature object), and a cape (a 21 x 31 grid) whose top edge lies on the back of the
    shoulders, pinned there by its vertex group "Shoulders". The cape is skinned to the same
    bones as the character (its own Armature modifier, its top row weighted as the shoulders'
    vertices under it), so its pinned vertices are where the deformed character's are.

``balloon.blend``
    A closed sphere of rubbery cloth (a quad sphere, 0.6 m across) with Pressure at a Target
    Volume of 1.5: it blows up to half as much again as it falls, lands on the floor, squashes
    and springs back.

``jelly.blend``
    A 0.5 m Soft Body cube (Jiggle Frequency 6 Hz, Volume on) dropped 0.6 m onto the floor: it
    squashes and jiggles back to its shape, keeping its volume.

``tearing.blend``
    A 1 x 0.6 m sheet with Tearing (factor 1.3), its left and right edges pinned (vertex group
    "Handles"), nicked in the middle of its top and bottom edges; its object's keyed X scale pulls
    the pinned edges apart (the handles are the object's: a Hook modifier's Empties would not
    carry the pins, which follow the object, not its modifiers) and it tears in two.

Run with the project's Python (bpy installed); the committed files are built with the oldest
Blender the add-on supports (see ``common``):

    .venv-bpy42/bin/python blend_examples/cloth.py                       # all of them, here
    .venv-bpy42/bin/python blend_examples/cloth.py tablecloth OUT.blend  # one, elsewhere
    .venv/bin/jakobsen bake blend_examples/tablecloth.blend
"""

from __future__ import annotations

import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

# -- the tablecloth -------------------------------------------------------------------------------

TABLE_TOP = (1.1, 1.1, 0.04)     # width, depth, thickness of the top (m)
TABLE_HEIGHT = 0.75              # the top's upper face above the floor
LEG = 0.06                       # legs' square section
LEG_INSET = 0.07                 # the legs' outer faces this far inside the top's edges
CLOTH_SIZE = 1.7                 # the tablecloth's side: an overhang of 0.3 m on each side
CLOTH_VERTICES = 48
CLOTH_THICKNESS = 0.005
DROP = 0.15                      # the cloth starts this far above the top
TABLECLOTH_FRAMES = (1, 72)


def table_parts():
    """(centre, size) of the table's boxes: the top, then the four legs."""
    w, d, t = TABLE_TOP
    parts = [((0.0, 0.0, TABLE_HEIGHT - t / 2), TABLE_TOP)]
    leg_height = TABLE_HEIGHT - t
    for sx in (-1, 1):
        for sy in (-1, 1):
            x = sx * (w / 2 - LEG_INSET - LEG / 2)
            y = sy * (d / 2 - LEG_INSET - LEG / 2)
            parts.append(((x, y, leg_height / 2), (LEG, LEG, leg_height)))
    return parts


def boxes(parts):
    """Vertices and faces of several boxes ((centre, size) each) in one mesh."""
    vertices, faces = [], []
    for centre, size in parts:
        v, f = common.box(size)
        faces += [[i + len(vertices) for i in face] for face in f]
        vertices += (v + np.asarray(centre)).tolist()
    return np.array(vertices), faces


def floor(name: str = "Floor", size: float = 40.0, colour=(0.78, 0.74, 0.68)):
    """A flat floor at z = 0: a Collider with Shape Plane."""
    g = size / 2
    obj = common.mesh_object(name, np.array([[-g, -g, 0.0], [g, -g, 0.0], [g, g, 0.0], [-g, g, 0.0]]),
                             [[0, 1, 2, 3]], material=common.material(name, colour))
    obj.jakobsen.enabled = True
    obj.jakobsen.type = 'COLLIDER'
    obj.jakobsen.collider.shape = 'PLANE'
    return obj


def tablecloth_scene(*, drop: float = DROP, vertices: int = CLOTH_VERTICES, fps: int = 24,
                     frames=TABLECLOTH_FRAMES):
    """The tablecloth scene in a new file (the numbers may be changed: the tests drop it from other
    heights, at other resolutions and frame rates); returns (table, cloth)."""
    scene = common.new_file("Tablecloth", frames=frames, fps=fps)
    scene.jakobsen.substeps = 10

    vertices_, faces = boxes(table_parts())
    table = common.mesh_object("Table", vertices_, faces, material=common.material("Wood", (0.45, 0.28, 0.15)))
    table.jakobsen.enabled = True
    table.jakobsen.type = 'COLLIDER'
    table.jakobsen.collider.shape = 'MESH'
    table.jakobsen.collider.friction = 0.6

    grid, quads = common.grid(vertices, vertices, CLOTH_SIZE, CLOTH_SIZE)
    grid[:, :2] -= CLOTH_SIZE / 2
    cloth = common.mesh_object("Tablecloth", grid, quads, material=common.material("Linen", (0.85, 0.20, 0.16)),
                               smooth=True)
    cloth.location = (0.0, 0.0, TABLE_HEIGHT + drop)
    cloth.jakobsen.enabled = True
    cloth.jakobsen.type = 'CLOTH'
    s = cloth.jakobsen.cloth
    s.density = 0.2             # cotton
    s.bend_stiffness = 0.01
    s.thickness = CLOTH_THICKNESS
    s.friction = 0.6

    floor()
    common.camera("Camera", location=(2.6, -2.9, 2.0), target=(0.0, 0.0, 0.55), lens=40.0)
    common.sun("Sun")
    return table, cloth


def build_tablecloth(path: str) -> str:
    tablecloth_scene()
    return common.finish(path, TABLECLOTH_FRAMES[0])


# -- the cape ----------------------------------------------------------------------------------

CAPE_FRAMES = (1, 96)
CAPE_VERTICES = (21, 31)         # across, down
CAPE_LENGTH = 0.95
# The character's torso: rings of (height, half width, half depth) from the hips to the neck.
TORSO_RINGS = ((0.90, 0.17, 0.11), (1.02, 0.15, 0.10), (1.14, 0.16, 0.105), (1.28, 0.19, 0.12),
               (1.40, 0.21, 0.125), (1.46, 0.19, 0.11), (1.50, 0.07, 0.06))
SHOULDER_RING = 4                # the ring the cape hangs from (1.40 m, across the shoulder blades)
RING_SEGMENTS = 48
# Bones: name, head, tail, parent.
BONES = (("Hips", (0.0, 0.0, 0.90), (0.0, 0.0, 1.02), None),
         ("Spine", (0.0, 0.0, 1.02), (0.0, 0.0, 1.26), "Hips"),
         ("Chest", (0.0, 0.0, 1.26), (0.0, 0.0, 1.46), "Spine"),
         ("Neck", (0.0, 0.0, 1.46), (0.0, 0.0, 1.60), "Chest"),
         ("Shoulder.L", (0.03, 0.0, 1.42), (0.19, 0.0, 1.44), "Chest"),
         ("Shoulder.R", (-0.03, 0.0, 1.42), (-0.19, 0.0, 1.44), "Chest"),
         ("Arm.L", (0.21, 0.0, 1.43), (0.27, 0.0, 0.85), "Shoulder.L"),
         ("Arm.R", (-0.21, 0.0, 1.43), (-0.27, 0.0, 0.85), "Shoulder.R"),
         ("Leg.L", (0.09, 0.0, 0.90), (0.10, 0.0, 0.05), "Hips"),
         ("Leg.R", (-0.09, 0.0, 0.90), (-0.10, 0.0, 0.05), "Hips"))


def _smooth(e0: float, e1: float, x):
    t = np.clip((np.asarray(x, float) - e0) / (e1 - e0), 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


def torso_weights(points: np.ndarray) -> dict[str, np.ndarray]:
    """Each torso bone's weight at ``points`` (n, 3), in the character's rest pose: blended up the
    spine by height, and across the shoulders towards each side's Shoulder bone (so a shrug
    bends the top of the back). They sum to 1 at every point."""
    x, z = points[:, 0], points[:, 2]
    up1, up2, up3 = _smooth(0.96, 1.08, z), _smooth(1.18, 1.32, z), _smooth(1.46, 1.50, z)
    w = {"Hips": 1 - up1, "Spine": up1 * (1 - up2), "Chest": up2 * (1 - up3), "Neck": up3}
    # Across the top of the back: the outer parts of the shoulders ride on the Shoulder bones.
    side = _smooth(0.02, 0.17, np.abs(x)) * _smooth(1.28, 1.40, z) * (1 - up3) * 0.8
    chest = w["Chest"]
    w["Shoulder.L"] = np.where(x > 0, chest * side, 0.0)
    w["Shoulder.R"] = np.where(x < 0, chest * side, 0.0)
    w["Chest"] = chest * (1 - side)
    return w


def torso():
    """The torso's vertices and quads: rings of ``RING_SEGMENTS`` round the body, closed at the
    bottom and top by fans; ring k's vertex j at angle 2 pi j / segments from +X towards -Y."""
    angles = 2 * math.pi * np.arange(RING_SEGMENTS) / RING_SEGMENTS
    vertices = []
    for z, hw, hd in TORSO_RINGS:
        vertices += np.c_[hw * np.cos(angles), -hd * np.sin(angles), np.full(RING_SEGMENTS, z)].tolist()
    s, rings = RING_SEGMENTS, len(TORSO_RINGS)
    faces = [[k * s + j, k * s + (j + 1) % s, (k + 1) * s + (j + 1) % s, (k + 1) * s + j]
             for k in range(rings - 1) for j in range(s)]
    bottom, top = len(vertices), len(vertices) + 1
    vertices += [[0.0, 0.0, TORSO_RINGS[0][0]], [0.0, 0.0, TORSO_RINGS[-1][0]]]
    faces += [[bottom, (j + 1) % s, j] for j in range(s)]
    faces += [[top, (rings - 1) * s + j, (rings - 1) * s + (j + 1) % s] for j in range(s)]
    return np.array(vertices), faces


def limb(a, b, radius: float, segments: int = 10, rings: int = 6):
    """A closed tube from ``a`` to ``b``: vertices and faces."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    axis = (b - a) / np.linalg.norm(b - a)
    u = np.cross(axis, [0.0, 1.0, 0.0])
    u /= np.linalg.norm(u)
    v = np.cross(axis, u)
    angles = 2 * math.pi * np.arange(segments) / segments
    vertices = [a + t * (b - a) + radius * (np.cos(q) * u + np.sin(q) * v)
                for t in np.linspace(0.0, 1.0, rings) for q in angles]
    faces = [[k * segments + j, k * segments + (j + 1) % segments, (k + 1) * segments + (j + 1) % segments,
              (k + 1) * segments + j] for k in range(rings - 1) for j in range(segments)]
    n = len(vertices)
    vertices += [a, b]
    faces += [[n, (j + 1) % segments, j] for j in range(segments)]
    faces += [[n + 1, (rings - 1) * segments + j, (rings - 1) * segments + (j + 1) % segments]
              for j in range(segments)]
    return np.array(vertices), faces


def _cape_top(vertices_torso: np.ndarray) -> np.ndarray:
    """The torso's vertices the cape's top edge lies on: the back half of the shoulder ring
    (its +Y side, between the sides), in order from -X to +X: ``CAPE_VERTICES[0]`` of them."""
    s = RING_SEGMENTS
    ring = vertices_torso[SHOULDER_RING * s:(SHOULDER_RING + 1) * s]
    # Angles from -X (j = s/2) round the back (+Y: j > s/2) to +X (j = s): the middle of them.
    count = CAPE_VERTICES[0]
    first = s // 2 + (s // 2 + 1 - count) // 2
    return SHOULDER_RING * s + first + np.arange(count)


def build_cape(path: str) -> str:
    cape_scene()
    return common.finish(path, CAPE_FRAMES[0])


def cape_scene(*, parent_to_bone: bool = False, fps: int = 24, frames=CAPE_FRAMES):
    """The cape scene in a new file; returns (armature, character, cape).

    parent_to_bone: instead of its own Armature modifier, the cape is parented to the Chest bone
    (and the character's shoulders under its top edge weighted to the Chest alone, so they move
    with that bone as a whole): the other way a user attaches a cape."""
    import bpy

    scene = common.new_file("Cape", frames=frames, fps=fps)
    scene.jakobsen.substeps = 10

    # -- the armature ------------------------------------------------------------------------
    arm_data = bpy.data.armatures.new("Rig")
    rig = bpy.data.objects.new("Rig", arm_data)
    scene.collection.objects.link(rig)
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode='EDIT')
    for name, head, tail, parent in BONES:
        bone = arm_data.edit_bones.new(name)
        bone.head, bone.tail = head, tail
        if parent:
            bone.parent = arm_data.edit_bones[parent]
            bone.use_connect = False
    bpy.ops.object.mode_set(mode='OBJECT')

    # -- the character: one mesh, its parts weighted by hand ---------------------------------
    parts = [torso()]
    names = [None]
    for side, sx in (("L", 1), ("R", -1)):
        parts.append(limb((sx * 0.21, 0.0, 1.40), (sx * 0.27, 0.0, 0.85), 0.05))
        names.append(f"Arm.{side}")
        parts.append(limb((sx * 0.09, 0.0, 0.92), (sx * 0.10, 0.0, 0.03), 0.07))
        names.append(f"Leg.{side}")
    head_v, head_f = limb((0.0, 0.0, 1.52), (0.0, 0.0, 1.76), 0.09, segments=12, rings=7)
    head_v[:-2, :2] *= np.sin(np.linspace(0.35, math.pi - 0.35, 7)).repeat(12)[:, None] / 0.9 + 0.0
    parts.append((head_v, head_f))
    names.append("Neck")
    vertices, faces, groups = [], [], {b[0]: np.zeros(0) for b in BONES}
    weights = []
    for (v, f), bone in zip(parts, names):
        faces += [[i + len(vertices) for i in face] for face in f]
        w = torso_weights(v) if bone is None else {bone: np.ones(len(v))}
        if bone is None and parent_to_bone:
            w = _chest_only(v, w)
        weights.append((len(vertices), len(v), w))
        vertices += v.tolist()
    vertices = np.array(vertices)
    body = common.mesh_object("Character", vertices, faces, material=common.material("Skin", (0.36, 0.42, 0.62)),
                              smooth=True)
    for name, *_ in BONES:
        group = body.vertex_groups.new(name=name)
        for start, count, w in weights:
            if name in w:
                idx = np.flatnonzero(w[name] > 1e-6)
                for i in idx:
                    group.add([int(start + i)], float(w[name][i]), 'REPLACE')
    body.parent = rig
    mod = body.modifiers.new("Armature", 'ARMATURE')
    mod.object = rig

    # -- the cape: its top edge on the back of the shoulders ---------------------------------
    nx, ny = CAPE_VERTICES
    top_index = _cape_top(vertices)
    top = vertices[top_index]
    t = np.linspace(0.0, 1.0, ny)
    # Each column hangs straight down from its top vertex, a little out from the back and widening.
    flare = 1.0 + 0.35 * t
    cape_v = np.empty((ny, nx, 3))
    cape_v[:, :, 0] = top[None, :, 0] * flare[:, None]
    cape_v[:, :, 1] = top[None, :, 1] + 0.06 * np.sqrt(t)[:, None]
    cape_v[:, :, 2] = top[None, :, 2] - CAPE_LENGTH * t[:, None]
    cape_v = cape_v.reshape(-1, 3)
    ix, iy = np.meshgrid(np.arange(nx - 1), np.arange(ny - 1))
    a = (iy * nx + ix).ravel()
    cape_faces = np.stack([a, a + nx, a + nx + 1, a + 1], axis=1)
    cape = common.mesh_object("Cape", cape_v, cape_faces, material=common.material("Cape Red", (0.72, 0.08, 0.10)),
                              smooth=True)
    pins = cape.vertex_groups.new(name="Shoulders")
    pins.add(list(range(nx)), 1.0, 'REPLACE')
    if parent_to_bone:
        cape.parent = rig
        cape.parent_type = 'BONE'
        cape.parent_bone = "Chest"
        _keep_world(cape, np.eye(4))
    else:
        # The same weights as the shoulder vertices under the top row; none below it.
        for start, count, w in weights[:1]:
            for name, values in w.items():
                group = cape.vertex_groups.get(name) or cape.vertex_groups.new(name=name)
                for k, i in enumerate(top_index):
                    if values[i] > 1e-6:
                        group.add([k], float(values[i]), 'REPLACE')
        cape.parent = rig
        mod = cape.modifiers.new("Armature", 'ARMATURE')
        mod.object = rig
    cape.jakobsen.enabled = True
    cape.jakobsen.type = 'CLOTH'
    s = cape.jakobsen.cloth
    s.pin_group = "Shoulders"
    s.density = 0.3             # wool
    s.bend_stiffness = 0.02
    s.thickness = 0.005

    _animate(rig, frames)
    floor()
    _follow_camera(rig, offset=(2.0, 2.4, 1.5))
    common.sun("Sun")
    return rig, body, cape


def _follow_camera(rig, offset):
    """A camera behind the character and to its side that keeps ``offset`` from the rig across the
    floor (Copy Location of X and Y, with the offset) and looks at its chest (Track To the Chest
    bone): the cape stays the same size in the picture as the character walks away."""
    cam = common.camera("Camera", location=offset, target=(0.0, 0.0, 1.2), lens=30.0)
    follow = cam.constraints.new('COPY_LOCATION')
    follow.target = rig
    follow.use_z = False
    follow.use_offset = True
    track = cam.constraints.new('TRACK_TO')
    track.target, track.subtarget = rig, "Chest"
    track.track_axis, track.up_axis = 'TRACK_NEGATIVE_Z', 'UP_Y'
    return cam


def _chest_only(v, w):
    """Torso weights with the ring the cape hangs from and its neighbours on the Chest alone."""
    w = dict(w)
    for name in ("Shoulder.L", "Shoulder.R"):
        w["Chest"] = w["Chest"] + w[name]
        w[name] = np.zeros(len(v))
    return w


def _keep_world(obj, world):
    """The parent inverse that keeps ``obj`` at ``world`` (4x4) under its (bone) parent, as
    Ctrl P > Bone sets it."""
    import bpy
    from mathutils import Matrix

    obj.matrix_parent_inverse.identity()
    bpy.context.view_layer.update()
    obj.matrix_parent_inverse = obj.matrix_world.inverted() @ Matrix(np.asarray(world).tolist())


def _animate(rig, frames):
    """Keys: the rig walks forward (-Y, where it faces) and turns to its left; the hips sway, the spine twists,
    the shoulders shrug twice, the legs and arms swing. The first frame is not the rest pose
    (the shoulders are already up a little), as in most animation."""
    first, last = frames
    span = last - first
    step = 8  # a key every 8 frames
    for k, frame in enumerate(range(first, last + 1, step)):
        u = (frame - first) / span
        phase = 2 * math.pi * 2.0 * u  # two strides
        rig.location = (0.0, -1.6 * u, 0.0)
        rig.rotation_euler = (0.0, 0.0, math.radians(35.0) * _smooth(0.4, 1.0, u))
        rig.keyframe_insert("location", frame=frame)
        rig.keyframe_insert("rotation_euler", frame=frame)
        pose = rig.pose.bones
        for b in pose:
            b.rotation_mode = 'XYZ'
        pose["Hips"].rotation_euler = (0.0, 0.05 * math.sin(phase), 0.08 * math.sin(phase))
        pose["Spine"].rotation_euler = (0.0, 0.0, -0.12 * math.sin(phase))
        shrug = 0.15 + 0.25 * math.sin(math.pi * 2.0 * u) ** 2
        # About each bone's X (across its length, horizontal): its outer end goes up.
        pose["Shoulder.L"].rotation_euler = (shrug, 0.0, 0.0)
        pose["Shoulder.R"].rotation_euler = (shrug, 0.0, 0.0)
        pose["Arm.L"].rotation_euler = (0.4 * math.sin(phase), 0.0, 0.0)
        pose["Arm.R"].rotation_euler = (-0.4 * math.sin(phase), 0.0, 0.0)
        pose["Leg.L"].rotation_euler = (-0.35 * math.sin(phase), 0.0, 0.0)
        pose["Leg.R"].rotation_euler = (0.35 * math.sin(phase), 0.0, 0.0)
        for b in pose:
            b.keyframe_insert("rotation_euler", frame=frame)


# -- the balloon, the jelly cube and the tearing sheet ---------------------------------------------

BALLOON_RADIUS = 0.3
BALLOON_DIVISIONS = 12           # quads along each side of the cube the sphere is made from
BALLOON_VOLUME = 1.5             # Pressure's Target Volume: blown up to half as much again
BALLOON_HEIGHT = 1.2             # its bottom above the ground at the start
JELLY_SIZE = 0.5
JELLY_DIVISIONS = 8
JELLY_HEIGHT = 0.6
SHEET_SIZE = (1.0, 0.6)
SHEET_VERTICES = (31, 19)
SHEET_STRETCH = 1.8              # the sheet's object is scaled this much along X by the end
TEAR_FACTOR = 1.3
NOTCH = 4
BODY_FRAMES = (1, 96)


def _cube_mesh(divisions: int, size: float, sphere: bool):
    from jakobsen_engine.geometry.primitives import cube

    return cube(divisions, size, sphere=sphere)


def balloon_scene(*, volume: float = BALLOON_VOLUME, frames=BODY_FRAMES):
    """A closed sphere of cloth whose Pressure keeps ``volume`` times the volume it encloses as
    modelled: it blows up as it falls and bounces on the floor. Returns the balloon."""
    scene = common.new_file("Balloon", frames=frames)
    scene.jakobsen.substeps = 10
    vertices, faces = _cube_mesh(BALLOON_DIVISIONS, 2 * BALLOON_RADIUS, True)
    balloon = common.mesh_object("Balloon", vertices, faces, material=common.material("Balloon", (0.85, 0.15, 0.35)),
                                 smooth=True)
    balloon.location = (0.0, 0.0, BALLOON_HEIGHT + BALLOON_RADIUS)
    balloon.jakobsen.enabled = True
    balloon.jakobsen.type = 'CLOTH'
    s = balloon.jakobsen.cloth
    s.density = 0.1              # thin rubber
    s.use_rigid_stretch = s.use_rigid_shear = False
    s.stretch_stiffness = s.shear_stiffness = 300.0  # rubber stretches as it is blown up
    s.bend_stiffness = 0.01
    s.use_pressure = True
    s.pressure_volume = volume
    s.pressure_stiffness = 3000.0   # soft enough to squash as it lands (10,000: 3%)
    s.air_drag = 0.3
    floor()
    common.camera("Camera", location=(2.6, -3.4, 1.6), target=(0.0, 0.0, 0.8), lens=35.0)
    common.sun("Sun")
    return balloon


def jelly_scene(*, frequency: float = 6.0, frames=BODY_FRAMES):
    """A soft body cube (jelly: it jiggles at ``frequency`` Hz, Volume on) dropped on the floor:
    it squashes, and jiggles back to its shape. Returns the cube."""
    scene = common.new_file("Jelly", frames=frames)
    scene.jakobsen.substeps = 10
    vertices, faces = _cube_mesh(JELLY_DIVISIONS, JELLY_SIZE, False)
    jelly = common.mesh_object("Jelly", vertices, faces, material=common.material("Jelly", (0.30, 0.75, 0.30)))
    jelly.location = (0.0, 0.0, JELLY_HEIGHT + JELLY_SIZE / 2)
    jelly.jakobsen.enabled = True
    jelly.jakobsen.type = 'SOFT_BODY'
    jelly.jakobsen.soft_body.jiggle_frequency = frequency
    jelly.jakobsen.soft_body.use_volume = True
    jelly.jakobsen.soft_body.volume_stiffness = 100000.0  # jelly is mostly water: it hardly gives up volume
    s = jelly.jakobsen.cloth
    s.density = 10.0             # kg/m^2 of its surface
    floor()
    common.camera("Camera", location=(2.2, -2.8, 1.3), target=(0.0, 0.0, 0.4), lens=40.0)
    common.sun("Sun")
    return jelly


def tearing_scene(*, factor: float = TEAR_FACTOR, stretch: float = SHEET_STRETCH, frames=BODY_FRAMES):
    """A sheet hanging between two handles, its left and right edges pinned (vertex group
    "Handles"); the handles are pulled apart by the object's keyed X scale (1 to ``stretch``
    between frames 8 and 80): the pinned edges move apart, the cloth stretches and tears once its
    edges are stretched ``factor`` times their length (Tearing), from the notches in the middle of
    its top and bottom edges. Returns the sheet."""
    scene = common.new_file("Tearing", frames=frames)
    scene.jakobsen.substeps = 10
    nx, ny = SHEET_VERTICES
    w, h = SHEET_SIZE
    vertices, faces = common.grid(nx, ny, w, h)
    # A notch cut into the middle of the top and bottom edges (one face wide, NOTCH faces deep), as
    # a sheet is nicked to tear it: the narrower middle stretches most, so it tears there.
    column, row = np.arange(len(faces)) % (nx - 1), np.arange(len(faces)) // (nx - 1)
    notch = (column == (nx - 1) // 2) & ((row < NOTCH) | (row >= ny - 1 - NOTCH))
    faces = faces[~notch]
    vertices = vertices[:, [0, 2, 1]]  # standing up, in the XZ plane
    vertices[:, 0] -= w / 2
    sheet = common.mesh_object("Sheet", vertices, faces, material=common.material("Paper", (0.92, 0.88, 0.70)),
                               smooth=True)
    sheet.location = (0.0, 0.0, 0.9)
    handles = sheet.vertex_groups.new(name="Handles")
    handles.add(np.flatnonzero(np.abs(np.abs(vertices[:, 0]) - w / 2) < 1e-9).tolist(), 1.0, 'REPLACE')
    sheet.jakobsen.enabled = True
    sheet.jakobsen.type = 'CLOTH'
    s = sheet.jakobsen.cloth
    s.pin_group = "Handles"
    s.density = 0.2
    s.use_rigid_stretch = s.use_rigid_shear = False
    s.stretch_stiffness = s.shear_stiffness = 500.0
    s.bend_stiffness = 0.01
    s.use_tearing = True
    s.tear_factor = factor
    for frame, scale in ((frames[0], 1.0), (8, 1.0), (80, stretch)):
        sheet.scale = (scale, 1.0, 1.0)
        sheet.keyframe_insert("scale", frame=frame)
    # The handles: two bars along the pinned edges, seen only, carried by the sheet's X scale.
    for side in (-1, 1):
        v, f = common.box((0.03, 0.03, h + 0.06))
        bar = common.mesh_object(f"Handle {'L' if side < 0 else 'R'}", v, f,
                                 material=common.material(f"Handle {side}", (0.25, 0.25, 0.28)))
        bar.location = (side * w / 2, 0.0, h / 2)
        bar.parent = sheet
    floor()
    common.camera("Camera", location=(0.0, -3.2, 1.4), target=(0.0, 0.0, 1.15), lens=35.0)
    common.sun("Sun")
    return sheet


def build_balloon(path: str) -> str:
    balloon_scene()
    return common.finish(path, BODY_FRAMES[0])


def build_jelly(path: str) -> str:
    jelly_scene()
    return common.finish(path, BODY_FRAMES[0])


def build_tearing(path: str) -> str:
    tearing_scene()
    return common.finish(path, BODY_FRAMES[0])


# -- the command line ----------------------------------------------------------------------------

EXAMPLES = {"tablecloth": build_tablecloth, "cape": build_cape, "balloon": build_balloon, "jelly": build_jelly,
            "tearing": build_tearing}


def main(argv) -> None:
    """``cloth.py`` builds every example next to this file; ``cloth.py NAME [OUT.blend]`` one."""
    args = [a for a in argv if not a.startswith("-")]
    if args and args[0] not in EXAMPLES:
        raise SystemExit(f"cloth.py: unknown example {args[0]!r}; one of {', '.join(EXAMPLES)}")
    chosen = [args[0]] if args else list(EXAMPLES)
    for name in chosen:
        out = os.path.abspath(args[1]) if len(args) > 1 else os.path.join(common.HERE, f"{name}.blend")
        EXAMPLES[name](out)
    import bpy

    if tuple(bpy.app.version) < (5, 0, 0):  # see common.main
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
