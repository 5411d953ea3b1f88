"""What the example builders share: a fresh empty file with the add-on registered, meshes from
numpy arrays, flat-colour materials, a camera aimed at a point, Workbench settings that render
the examples clearly, and a compact save.

Each ``build_*.py`` next to this file is a script run with the project's Python (bpy installed):

    .venv-bpy42/bin/python blend_examples/build_flag.py      # writes blend_examples/flag.blend
    .venv/bin/python blend_examples/build_flag.py OUT.blend  # or elsewhere

The committed .blend files are built with the oldest Blender the add-on supports (bpy 4.2, the
``.venv-bpy42`` that ``./run test`` makes): Blender reads files from older versions, not from
newer ones (4.2 cannot open a file saved by 5.0).
"""

from __future__ import annotations

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def new_file(name: str, *, frames: tuple[int, int], fps: int = 24):
    """An empty factory file with the add-on registered; returns the scene, renamed ``name``."""
    if REPO not in sys.path:
        sys.path.insert(0, REPO)
    import bpy

    import addon

    bpy.ops.wm.read_factory_settings(use_empty=True)
    if not hasattr(bpy.types.Scene, "jakobsen"):
        addon.register()
    scene = bpy.context.scene
    scene.name = name
    scene.frame_start, scene.frame_end = frames
    scene.frame_current = frames[0]
    scene.render.fps, scene.render.fps_base = fps, 1.0
    scene.unit_settings.system = 'METRIC'
    scene.render.engine = 'BLENDER_WORKBENCH'
    scene.render.resolution_x, scene.render.resolution_y = 1280, 720
    display = scene.display.shading
    display.light = 'STUDIO'
    display.studio_light = "paint.sl"
    display.color_type = 'MATERIAL'
    display.show_shadows = True
    display.shadow_intensity = 0.45
    display.show_cavity = True
    display.cavity_type = 'WORLD'
    scene.display.light_direction = (0.45, -0.35, 0.82)
    world = bpy.data.worlds.new(f"{name} World")
    world.color = (0.62, 0.68, 0.76)
    scene.world = world
    return scene


def mesh_object(name: str, vertices: np.ndarray, faces, *, material=None, smooth: bool = False):
    """A mesh object from (n, 3) vertices and faces (lists of vertex indices), linked to the scene."""
    import bpy

    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(np.asarray(vertices, dtype=float).tolist(), [], [list(map(int, f)) for f in faces])
    mesh.validate()
    mesh.update()
    if smooth:
        mesh.shade_smooth()
    if material is not None:
        mesh.materials.append(material)
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def grid(nx: int, ny: int, width: float, height: float):
    """Vertices (nx * ny, 3) of a width x height grid in the local XY plane, from (0, 0), and its quads."""
    xs, ys = np.linspace(0.0, width, nx), np.linspace(0.0, height, ny)
    gx, gy = np.meshgrid(xs, ys)
    vertices = np.stack([gx.ravel(), gy.ravel(), np.zeros(gx.size)], axis=1)
    ix, iy = np.meshgrid(np.arange(nx - 1), np.arange(ny - 1))
    a = (iy * nx + ix).ravel()
    return vertices, np.stack([a, a + 1, a + 1 + nx, a + nx], axis=1)


def box(size=(1.0, 1.0, 1.0)):
    """Vertices (8, 3) and outward quads of a box centred on the origin."""
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float) * np.asarray(size) / 2
    faces = [[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1], [2, 3, 7, 6], [0, 2, 6, 4], [1, 5, 7, 3]]
    return corners, faces


def material(name: str, rgb):
    import bpy

    mat = bpy.data.materials.new(name)
    mat.diffuse_color = (*rgb, 1.0)
    mat.roughness = 0.6
    return mat


def camera(name: str, location, target, *, lens: float = 35.0):
    """A camera at ``location`` looking at ``target``, made the scene's camera."""
    import bpy
    from mathutils import Vector

    data = bpy.data.cameras.new(name)
    data.lens = lens
    data.clip_end = 1000.0
    cam = bpy.data.objects.new(name, data)
    bpy.context.scene.collection.objects.link(cam)
    cam.location = location
    cam.rotation_mode = 'QUATERNION'
    cam.rotation_quaternion = (Vector(target) - Vector(location)).to_track_quat('-Z', 'Y')
    cam.rotation_mode = 'XYZ'
    bpy.context.scene.camera = cam
    return cam


def sun(name: str, rotation=(0.7, 0.1, 0.6), energy: float = 3.0):
    """A sun light (for Eevee and Cycles; Workbench uses its studio light)."""
    import bpy

    data = bpy.data.lights.new(name, 'SUN')
    data.energy = energy
    light = bpy.data.objects.new(name, data)
    light.rotation_euler = rotation
    bpy.context.scene.collection.objects.link(light)
    return light


def save(path: str) -> str:
    """Save compressed, without the add-on's previews or anything unused; returns the path."""
    import bpy

    path = os.path.abspath(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    bpy.ops.outliner.orphans_purge(do_recursive=True)
    bpy.context.preferences.filepaths.save_version = 0  # no .blend1 backup next to it
    bpy.ops.wm.save_as_mainfile(filepath=path, compress=True, check_existing=False)
    print(f"wrote {path} ({os.path.getsize(path) / 1024:.0f} KB)")
    return path


def finish(path: str, frame: int) -> str:
    """Nothing selected, the scene on ``frame``, saved to ``path`` (see ``save``); returns the path."""
    import bpy

    for obj in bpy.context.view_layer.objects:
        obj.select_set(False)
    bpy.context.scene.frame_set(frame)
    return save(path)


def out_path(default_name: str) -> str:
    """The .blend to write: the script's first argument, or ``default_name`` next to the scripts."""
    args = [a for a in sys.argv[1:] if not a.startswith("-")]
    return os.path.abspath(args[0]) if args else os.path.join(HERE, default_name)


def main(build, default_name: str) -> None:
    """Run ``build(path)`` for the script's output path and end the process.

    bpy 4.x goes wrong in its exit handlers once the add-on has been registered (4.2 crashes, 4.5
    hangs), after the file is saved; there the process ends first.
    """
    build(out_path(default_name))
    import bpy

    if tuple(bpy.app.version) < (5, 0, 0):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
