"""``jakobsen demo``: bake the example scenes and show them in one contact sheet PNG.

``run_demo`` is the add-on at work: each .blend in ``blend_examples/`` (a flag in the wind, boxes
falling onto a tower, an off-road car driving over bumpy ground through a wall of crates, a car
following an S-shaped road, a car towing a trailer round a turn, a tablecloth dropped on a table, a
cape on a walking character, a balloon, a jelly cube, a sheet torn apart, a car door that a ram
dents) is opened headless, baked with ``jakobsen bake``'s code path, saved as ``<name>_baked.blend``
next to the PNG, and a few of its frames are rendered with Workbench, one row per example.

``run_engine_demo`` (``jakobsen demo --engine``) is the engine alone, no add-on: a pinned cloth
falls and drapes over a sphere; the cloth becomes a mesh whose vertices are set from the
engine's positions for each rendered frame, and the frames are rendered into one grid image.
"""

from __future__ import annotations

import os
import time

import numpy as np

# The demo scene, in metres and seconds.
CLOTH_SIZE = 2.0
CLOTH_VERTICES = 41
CLOTH_HEIGHT = 1.5
SPHERE_RADIUS = 0.5
SPHERE_CENTRE = (0.0, 0.0, 0.6)
FRAME_RATE = 24
FRAME_COUNT = 72
SHEET_FRAMES = (1, 12, 24, 36, 48, 72)
SHEET_COLUMNS = 3
TILE_WIDTH, TILE_HEIGHT = 320, 180


def simulate_cloth(frames=FRAME_COUNT, keep=SHEET_FRAMES):
    """Run the engine; returns (rest vertices (n, 3), quad faces (f, 4), {frame: positions (n, 3)}
    for the frames in ``keep``, seconds spent stepping). As in Blender, frame 1 is the rest pose
    and frame k the state after k - 1 steps, so ``frames`` frames take ``frames - 1`` steps."""
    import jakobsen_engine as engine
    from jakobsen_engine.geometry.primitives import grid

    n = CLOTH_VERTICES
    verts, faces = grid(n, n, CLOTH_SIZE)
    verts[:, 2] += CLOTH_HEIGHT
    # Pin the two corners of the far (+y) edge.
    pins = [n * (n - 1), n * n - 1]
    weights = np.zeros(len(verts))
    weights[pins] = 1.0

    b = engine.ModelBuilder()
    cloth = b.add_cloth(verts, faces, name="cloth", pin_weights=weights, thickness=0.01, bend_stiffness=5e-5)
    sphere_pose = np.eye(4)
    sphere_pose[:3, 3] = SPHERE_CENTRE
    b.add_collider(engine.Sphere(radius=SPHERE_RADIUS, transform=sphere_pose, friction=0.5, name="sphere"))
    b.add_collider(engine.Plane.from_point_normal((0, 0, 0), (0, 0, 1), friction=0.5, name="ground"))
    model = b.finalize()
    solver = engine.Solver(model, engine.SolverSettings(frame_rate=FRAME_RATE, substeps=10, damping=0.5))
    state = solver.make_state()

    keep = set(keep)
    kept = {1: state.positions[cloth.slice].copy()} if 1 in keep else {}
    elapsed = 0.0
    for frame in range(2, frames + 1):
        t0 = time.perf_counter()
        solver.step_frame(state)
        elapsed += time.perf_counter() - t0
        if frame in keep:
            kept[frame] = state.positions[cloth.slice].copy()
    return verts, np.asarray(faces), kept, elapsed


# -- Blender scene ------------------------------------------------------------------------------


def _quad_mesh(bpy, name: str, verts: np.ndarray, faces: np.ndarray):
    """A mesh of quads built with foreach_set (no per-vertex Python loops)."""
    mesh = bpy.data.meshes.new(name)
    mesh.vertices.add(len(verts))
    mesh.vertices.foreach_set("co", np.ascontiguousarray(verts, dtype=np.float32).ravel())
    corners = np.ascontiguousarray(faces, dtype=np.int32).ravel()
    mesh.loops.add(len(corners))
    mesh.loops.foreach_set("vertex_index", corners)
    mesh.polygons.add(len(faces))
    mesh.polygons.foreach_set("loop_start", np.arange(0, len(corners), faces.shape[1], dtype=np.int32))
    mesh.update(calc_edges=True)
    mesh.validate()
    return mesh


def _material(bpy, name: str, rgb) -> object:
    mat = bpy.data.materials.new(name)
    mat.diffuse_color = (*rgb, 1.0)
    mat.roughness = 0.6
    mat.metallic = 0.0
    return mat


def _look_at(obj, target) -> None:
    from mathutils import Vector

    direction = Vector(target) - obj.location
    obj.rotation_mode = "QUATERNION"
    obj.rotation_quaternion = direction.to_track_quat("-Z", "Y")


def build_scene(bpy, verts: np.ndarray, faces: np.ndarray):
    """A new scene with the cloth, sphere, ground, camera and world; returns (scene, cloth object,
    created data-blocks to remove afterwards as (collection name, data-block) pairs)."""
    import bmesh

    created = []

    def keep(kind, block):
        created.append((kind, block))
        return block

    scene = keep("scenes", bpy.data.scenes.new("Jakobsen Demo"))
    scene.frame_start, scene.frame_end = 1, FRAME_COUNT
    scene.render.fps = FRAME_RATE

    world = keep("worlds", bpy.data.worlds.new("Jakobsen Demo World"))
    world.color = (0.62, 0.68, 0.76)
    scene.world = world

    shading = scene.display.shading
    shading.light = "STUDIO"
    shading.studio_light = "paint.sl"  # brighter than the default on the grazing ground plane
    shading.color_type = "MATERIAL"
    shading.show_shadows = True
    shading.shadow_intensity = 0.45
    shading.show_cavity = True
    shading.cavity_type = "WORLD"
    shading.show_specular_highlight = True
    scene.display.light_direction = (0.45, -0.35, 0.82)

    def add(name, data):
        obj = keep("objects", bpy.data.objects.new(name, data))
        scene.collection.objects.link(obj)
        return obj

    # Cloth: the engine's grid, smooth shaded.
    cloth_mesh = keep("meshes", _quad_mesh(bpy, "Jakobsen Cloth", verts, faces))
    cloth_mesh.shade_smooth()
    cloth_mesh.materials.append(keep("materials", _material(bpy, "Jakobsen Cloth", (0.80, 0.16, 0.10))))
    cloth = add("Cloth", cloth_mesh)

    # Sphere collider.
    bm = bmesh.new()
    bmesh.ops.create_uvsphere(bm, u_segments=48, v_segments=24, radius=SPHERE_RADIUS)
    sphere_mesh = keep("meshes", bpy.data.meshes.new("Jakobsen Sphere"))
    bm.to_mesh(sphere_mesh)
    bm.free()
    sphere_mesh.shade_smooth()
    sphere_mesh.materials.append(keep("materials", _material(bpy, "Jakobsen Sphere", (0.72, 0.74, 0.78))))
    sphere = add("Sphere", sphere_mesh)
    sphere.location = SPHERE_CENTRE

    # Ground plane at z = 0.
    g = 400.0  # large enough that its far edge lies on the horizon
    ground_mesh = keep("meshes", _quad_mesh(
        bpy, "Jakobsen Ground", np.array([[-g, -g, 0], [g, -g, 0], [g, g, 0], [-g, g, 0]], float),
        np.array([[0, 1, 2, 3]])))
    ground_mesh.materials.append(keep("materials", _material(bpy, "Jakobsen Ground", (0.85, 0.83, 0.78))))
    add("Ground", ground_mesh)

    # Camera: a 3/4 view from the right front, a little above, so the drape's profile shows.
    cam_data = keep("cameras", bpy.data.cameras.new("Jakobsen Camera"))
    cam_data.lens = 35.0
    cam_data.clip_end = 1000.0
    cam = add("Camera", cam_data)
    cam.location = (4.3, -2.0, 1.9)
    _look_at(cam, (0.0, 0.15, 0.8))
    scene.camera = cam
    return scene, cloth, created


def _remove(bpy, created) -> None:
    """Remove the demo's data-blocks, objects first so nothing still uses the data."""
    order = ["objects", "scenes", "meshes", "materials", "cameras", "worlds"]
    for kind in order:
        for k, block in created:
            if k == kind:
                try:
                    getattr(bpy.data, kind).remove(block)
                except (ReferenceError, RuntimeError):
                    pass


def run_engine_demo(out_path: str = "out/demo.png") -> str:
    """Simulate the pinned cloth, render the contact sheet to ``out_path``; returns its absolute path."""
    import bpy

    t_start = time.perf_counter()
    verts, faces, kept, elapsed = simulate_cloth()
    print(f"jakobsen demo: simulated {FRAME_COUNT} frames of a {CLOTH_VERTICES}x{CLOTH_VERTICES} cloth "
          f"({FRAME_RATE} fps, 10 substeps): {1000.0 * elapsed / (FRAME_COUNT - 1):.1f} ms per frame")

    scene, cloth, created = build_scene(bpy, verts, faces)
    mesh = cloth.data

    def set_cloth(_scene, frame: int) -> None:
        mesh.vertices.foreach_set("co", kept[frame].astype(np.float32).ravel())
        mesh.update()

    try:
        t0 = time.perf_counter()
        path = render_sheet(scene, set_cloth, out_path)
        t_render = time.perf_counter() - t0
    finally:
        _remove(bpy, created)
    print(f"jakobsen demo: rendered {len(SHEET_FRAMES)} frames {list(SHEET_FRAMES)} with Workbench "
          f"in {t_render:.1f} s ({time.perf_counter() - t_start:.1f} s in all)")
    print(f"jakobsen demo: contact sheet written to {path}")
    return path


def render_sheet(scene, on_frame, out_path: str) -> str:
    from .contact_sheet import render_contact_sheet

    return render_contact_sheet(scene, SHEET_FRAMES, os.fspath(out_path), columns=SHEET_COLUMNS,
                                width=TILE_WIDTH, height=TILE_HEIGHT, labels=True, on_frame=on_frame)


# -- the add-on demo: the example scenes --------------------------------------------------------

EXAMPLES_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            "blend_examples")
# Each example and the frames shown of it (one row of the sheet each).
EXAMPLES = (("flag", (1, 12, 36, 96)), ("rigid_boxes", (1, 16, 32, 72)), ("car", (1, 52, 62, 96)),
            ("follow_path", (1, 68, 136, 204)), ("trailer", (1, 48, 96, 144)),
            ("tablecloth", (1, 8, 16, 72)), ("cape", (1, 32, 64, 96)), ("balloon", (1, 14, 22, 96)),
            ("jelly", (1, 11, 14, 96)), ("tearing", (1, 20, 30, 96)), ("door", (1, 6, 24, 72)))
EXAMPLE_COLUMNS = 4


def run_demo(out_path: str = "out/demo.png", *, examples=EXAMPLES, frame_end: int | None = None,
             examples_dir: str = EXAMPLES_DIR) -> str:
    """Bake each example, save it next to ``out_path``, render its frames; returns the PNG's path.

    frame_end: bake only up to this frame (and show only frames up to it), for a quick run.
    The Blender session ends with the last baked example open.
    """
    import tempfile

    import bpy

    from .bake import bake_file
    from .contact_sheet import _read_png, render_contact_sheet, save_png

    out_path = os.path.abspath(out_path)
    out_dir = os.path.dirname(out_path)
    t_start = time.perf_counter()
    rows = []
    with tempfile.TemporaryDirectory(prefix="jakobsen_demo_") as tmp:
        for name, frames in examples:
            source = os.path.join(examples_dir, f"{name}.blend")
            if not os.path.isfile(source):
                raise FileNotFoundError(f"jakobsen demo: the example {source} is missing; build it with "
                                        f"blend_examples/build_{name}.py")
            baked = os.path.join(out_dir, f"{name}_baked.blend")
            if frame_end is not None:  # the examples start on frame 1
                frames = tuple(f for f in frames if f <= frame_end) or (1,)
            report = bake_file(source, baked, frames=(1, frame_end) if frame_end else None, every=24,
                               log=lambda text: print(text, flush=True))
            t0 = time.perf_counter()
            row = os.path.join(tmp, f"{name}.png")
            columns = min(EXAMPLE_COLUMNS, len(frames))
            lines = -(-len(frames) // columns)
            render_contact_sheet(bpy.context.scene, frames, row, columns=columns, width=TILE_WIDTH,
                                 height=TILE_HEIGHT, labels=True, gap=2)
            rows.append(_read_png(bpy, row, columns * TILE_WIDTH + (columns - 1) * 2,
                                  lines * TILE_HEIGHT + (lines - 1) * 2))
            print(f"jakobsen demo: {name}: baked frames {report.frames[0]}-{report.frames[1]} in "
                  f"{report.seconds:.1f} s, rendered frames {list(frames)} in {time.perf_counter() - t0:.1f} s")
        gap = 2
        width = max(r.shape[1] for r in rows)
        sheet = np.empty((sum(r.shape[0] for r in rows) + gap * (len(rows) - 1), width, 4), np.float32)
        sheet[..., :3], sheet[..., 3] = 0.15, 1.0
        y = 0
        for r in rows:  # _read_png gives the bottom row first; the sheet is top row first
            sheet[y:y + r.shape[0], :r.shape[1]] = r[::-1]
            y += r.shape[0] + gap
        path = save_png(sheet, out_path, name="jakobsen_demo_sheet")
    print(f"jakobsen demo: contact sheet written to {path} ({time.perf_counter() - t_start:.1f} s in all); "
          f"the baked scenes are in {out_dir}")
    return path
