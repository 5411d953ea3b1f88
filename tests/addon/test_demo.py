"""``jakobsen demo`` bakes the example scenes and writes a contact sheet of them;
``jakobsen demo --engine`` writes one of the engine's cloth falling onto a sphere."""

from __future__ import annotations

import glob
import os
import tempfile

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from jakobsen_tools.contact_sheet import render_contact_sheet  # noqa: E402
from jakobsen_tools.demo import EXAMPLES, run_demo, run_engine_demo  # noqa: E402

pytestmark = pytest.mark.blender

TILE_W, TILE_H, GAP, COLUMNS, ROWS = 320, 180, 2, 3, 2


def _load_png(path: str) -> np.ndarray:
    """Pixels (h, w, 4) float32, top row first."""
    from jakobsen_tools.contact_sheet import png_pixels

    return png_pixels(bpy, path)[::-1]


def _tiles(px: np.ndarray, columns: int, rows: int, w: int, h: int, gap: int) -> list[np.ndarray]:
    return [px[r * (h + gap):r * (h + gap) + h, c * (w + gap):c * (w + gap) + w, :3]
            for r in range(rows) for c in range(columns)]


def _background_difference(tile: np.ndarray) -> float:
    """Fraction of pixels that differ clearly from the tile's most common colour."""
    q = np.round(tile.reshape(-1, 3) * 31).astype(np.int32)
    keys = q[:, 0] * 1024 + q[:, 1] * 32 + q[:, 2]
    values, counts = np.unique(keys, return_counts=True)
    k = values[np.argmax(counts)]
    background = np.array([k // 1024, (k // 32) % 32, k % 32]) / 31.0
    return float(np.mean(np.abs(tile.reshape(-1, 3) - background).max(axis=1) > 0.08))


def test_engine_demo_writes_a_contact_sheet_of_the_falling_cloth(tmp_path, monkeypatch):
    # From an empty file, where the first render creates Blender's "Render Result" image: the
    # demo must not leave it (or anything else) behind.
    bpy.ops.wm.read_factory_settings(use_empty=True)
    images_before = len(bpy.data.images)
    scenes_before = len(bpy.data.scenes)
    objects_before = len(bpy.data.objects)
    # A temporary folder of this test's own: other processes (./run test's other lane) render
    # sheets of their own in the system's at the same time.
    own_tmp = tmp_path / "tmp"
    own_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(own_tmp))
    sheets_before = set(glob.glob(os.path.join(tempfile.gettempdir(), "jakobsen_sheet_*")))

    out = tmp_path / "sub" / "demo.png"
    path = run_engine_demo(str(out))

    assert os.path.abspath(path) == str(out)
    assert out.is_file() and out.stat().st_size > 1000
    px = _load_png(str(out))
    assert px.shape[:2] == (ROWS * TILE_H + (ROWS - 1) * GAP, COLUMNS * TILE_W + (COLUMNS - 1) * GAP)

    tiles = _tiles(px, COLUMNS, ROWS, TILE_W, TILE_H, GAP)
    for k, tile in enumerate(tiles):
        assert tile.mean() > 0.25, f"tile {k} is too dark ({tile.mean():.2f})"
        assert _background_difference(tile) > 0.05, f"tile {k} is blank"
        red = (tile[..., 0] > tile[..., 1] + 0.15) & (tile[..., 0] > tile[..., 2] + 0.15)
        assert red.mean() > 0.01, f"the (red) cloth is not visible in tile {k}: {red.mean():.3f} of the pixels"
    # The cloth moved: the first and last frames differ a lot.
    changed = np.abs(tiles[0] - tiles[-1]).max(axis=2) > 0.1
    assert changed.mean() > 0.05

    # Nothing left behind: the demo scene, the temporary images and render files are gone.
    assert len(bpy.data.images) == images_before
    assert len(bpy.data.scenes) == scenes_before
    assert len(bpy.data.objects) == objects_before
    assert set(glob.glob(os.path.join(tempfile.gettempdir(), "jakobsen_sheet_*"))) == sheets_before
    bpy.ops.wm.read_factory_settings()


def test_demo_bakes_the_examples_and_shows_them_in_one_sheet(tmp_path):
    out = tmp_path / "demo" / "demo.png"
    try:
        path = run_demo(str(out), frame_end=12)  # a short bake: frames 1-12 of each example
        px = _load_png(path)
    finally:
        bpy.ops.wm.read_factory_settings()
    # One row per example: the flag shows frames 1 and 12, the others frame 1 only (the first frame
    # shown after 1 is later than 12).
    names = [name for name, _ in EXAMPLES]
    assert names == ["flag", "rigid_boxes", "car", "follow_path", "trailer", "tablecloth", "cape", "balloon", "jelly",
                     "tearing", "door"]
    assert px.shape[:2] == (len(names) * TILE_H + (len(names) - 1) * GAP, 2 * TILE_W + GAP)
    flag_row = _tiles(px, 2, 1, TILE_W, TILE_H, GAP)
    firsts = [px[k * (TILE_H + GAP):k * (TILE_H + GAP) + TILE_H, :TILE_W, :3] for k in range(1, len(names))]
    for k, tile in enumerate(flag_row + firsts):
        assert _background_difference(tile) > 0.02, f"tile {k} is blank"
    red = [((t[..., 0] > t[..., 1] + 0.2) & (t[..., 0] > t[..., 2] + 0.2)).mean() for t in flag_row]
    assert min(red) > 0.02, f"the red flag is not visible: {red}"
    moved = np.abs(flag_row[0] - flag_row[1]).max(axis=2) > 0.1
    assert moved.mean() > 0.01, "the flag looks the same on frames 1 and 12"
    # The cars are in their pictures: the off-road car's red paint, the others' blue and green.
    car, follow, towing = firsts[1:4]
    paint = {"car": ((car[..., 0] > car[..., 1] + 0.2) & (car[..., 0] > car[..., 2] + 0.2)).mean(),
             "follow_path": ((follow[..., 2] > follow[..., 0] + 0.2) & (follow[..., 2] > follow[..., 1] + 0.05)).mean(),
             "trailer": ((towing[..., 1] > towing[..., 0] + 0.1) & (towing[..., 1] > towing[..., 2] + 0.1)).mean()}
    print("paint pixels:", {k: round(float(v), 4) for k, v in paint.items()})
    assert min(paint.values()) > 0.001, f"a car is not in its picture (share of its paint's pixels): {paint}"
    for name in names:
        assert (tmp_path / "demo" / f"{name}_baked.blend").is_file()


def test_contact_sheet_restores_the_scene_it_renders(tmp_path):
    bpy.ops.wm.read_factory_settings(use_empty=True)
    images_before = [image.name for image in bpy.data.images]
    scene = bpy.data.scenes.new("contact sheet test")
    cam_data = bpy.data.cameras.new("contact sheet cam")
    cam = bpy.data.objects.new("contact sheet cam", cam_data)
    mesh = bpy.data.meshes.new("contact sheet quad")
    mesh.from_pydata([(-1, -1, 0), (1, -1, 0), (1, 1, 0), (-1, 1, 0)], [], [(0, 1, 2, 3)])
    quad = bpy.data.objects.new("contact sheet quad", mesh)
    try:
        for obj in (cam, quad):
            scene.collection.objects.link(obj)
        cam.location = (0.0, 0.0, 5.0)
        scene.camera = cam
        scene.frame_set(7)
        scene.render.engine = "CYCLES"
        scene.render.resolution_x, scene.render.resolution_y = 640, 480
        scene.render.filepath = "//keep_me_"
        seen = []

        path = render_contact_sheet(scene, [1, 2, 3], str(tmp_path / "sheet.png"), columns=2, width=64, height=48,
                                    gap=0, on_frame=lambda s, f: seen.append((s.frame_current, f)))

        assert seen == [(1, 1), (2, 2), (3, 3)]
        assert _load_png(path).shape[:2] == (96, 128)
        assert scene.frame_current == 7
        assert scene.render.engine == "CYCLES"
        assert (scene.render.resolution_x, scene.render.resolution_y) == (640, 480)
        assert scene.render.filepath == "//keep_me_"

        assert [image.name for image in bpy.data.images] == images_before  # no "Render Result" left

        scene.camera = None
        with pytest.raises(ValueError, match="no camera"):
            render_contact_sheet(scene, [1], str(tmp_path / "none.png"))
    finally:
        bpy.data.objects.remove(quad)
        bpy.data.objects.remove(cam)
        bpy.data.meshes.remove(mesh)
        bpy.data.cameras.remove(cam_data)
        bpy.data.scenes.remove(scene)
        bpy.ops.wm.read_factory_settings()
