"""Render frames of a Blender scene with Workbench and tile them into one PNG (a contact sheet).

Works headless in the bpy module: each frame is rendered with ``write_still`` to a temporary
PNG, read back through ``bpy.data.images.load`` into numpy, and the tiles are saved as one
image through Blender's image API (no PIL). The scene's frame and every render setting touched
here are restored afterwards; the temporary files and images are removed.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from typing import Callable, Iterable, Optional

import numpy as np

# 3x5 pixel digits, one string of five rows each ("#" = ink).
_GLYPHS = {
    "0": ("###", "#.#", "#.#", "#.#", "###"),
    "1": (".#.", "##.", ".#.", ".#.", "###"),
    "2": ("###", "..#", "###", "#..", "###"),
    "3": ("###", "..#", "###", "..#", "###"),
    "4": ("#.#", "#.#", "###", "..#", "..#"),
    "5": ("###", "#..", "###", "..#", "###"),
    "6": ("###", "#..", "###", "#.#", "###"),
    "7": ("###", "..#", "..#", "..#", "..#"),
    "8": ("###", "#.#", "###", "#.#", "###"),
    "9": ("###", "#.#", "###", "..#", "###"),
    "-": ("...", "...", "###", "...", "..."),
    "f": (".##", "#..", "###", "#..", "#.."),
    # Letters (one case: labels are drawn in lower case) and the punctuation of wedge labels.
    "a": (".#.", "#.#", "###", "#.#", "#.#"),
    "b": ("##.", "#.#", "##.", "#.#", "##."),
    "c": (".##", "#..", "#..", "#..", ".##"),
    "d": ("##.", "#.#", "#.#", "#.#", "##."),
    "e": ("###", "#..", "##.", "#..", "###"),
    "g": (".##", "#..", "#.#", "#.#", ".##"),
    "h": ("#.#", "#.#", "###", "#.#", "#.#"),
    "i": ("###", ".#.", ".#.", ".#.", "###"),
    "j": ("..#", "..#", "..#", "#.#", ".#."),
    "k": ("#.#", "#.#", "##.", "#.#", "#.#"),
    "l": ("#..", "#..", "#..", "#..", "###"),
    "m": ("#.#", "###", "###", "#.#", "#.#"),
    "n": ("##.", "#.#", "#.#", "#.#", "#.#"),
    "o": (".#.", "#.#", "#.#", "#.#", ".#."),
    "p": ("##.", "#.#", "##.", "#..", "#.."),
    "q": (".#.", "#.#", "#.#", "##.", ".##"),
    "r": ("##.", "#.#", "##.", "#.#", "#.#"),
    "s": (".##", "#..", ".#.", "..#", "##."),
    "t": ("###", ".#.", ".#.", ".#.", ".#."),
    "u": ("#.#", "#.#", "#.#", "#.#", "###"),
    "v": ("#.#", "#.#", "#.#", "#.#", ".#."),
    "w": ("#.#", "#.#", "###", "###", "#.#"),
    "x": ("#.#", "#.#", ".#.", "#.#", "#.#"),
    "y": ("#.#", "#.#", ".#.", ".#.", ".#."),
    "z": ("###", "..#", ".#.", "#..", "###"),
    ".": ("...", "...", "...", "...", ".#."),
    ",": ("...", "...", "...", ".#.", "#.."),
    ":": ("...", ".#.", "...", ".#.", "..."),
    "=": ("...", "###", "...", "###", "..."),
    "_": ("...", "...", "...", "...", "###"),
    "+": ("...", ".#.", "###", ".#.", "..."),
    "/": ("..#", "..#", ".#.", "#..", "#.."),
    "(": (".#.", "#..", "#..", "#..", ".#."),
    ")": (".#.", "..#", "..#", "..#", ".#."),
    " ": ("...", "...", "...", "...", "..."),
}

FrameCallback = Callable[[object, int], None]


def _glyph_mask(text: str, scale: int) -> np.ndarray:
    """Boolean mask (rows, cols), top row first, of ``text`` in the 3x5 font, one blank column apart."""
    cols = []
    for k, ch in enumerate(text):
        rows = _GLYPHS.get(ch.lower(), ("...",) * 5)
        if k:
            cols.append(np.zeros((5, 1), bool))
        cols.append(np.array([[c == "#" for c in r] for r in rows], bool))
    mask = np.concatenate(cols, axis=1) if cols else np.zeros((5, 0), bool)
    return np.kron(mask, np.ones((scale, scale), bool))


def draw_label(tile: np.ndarray, text: str, *, scale: int = 3, margin: int = 5) -> None:
    """Draw ``text`` (digits, letters in one case, a little punctuation) in the top-left corner of
    ``tile`` (h, w, 4; top row first), in place; a text too wide for the tile is not drawn.

    Dark ink on a light, slightly transparent box so it reads on any background.
    """
    mask = _glyph_mask(text, scale)
    pad = scale
    h, w = mask.shape[0] + 2 * pad, mask.shape[1] + 2 * pad
    if h + margin > tile.shape[0] or w + margin > tile.shape[1]:
        return
    box = tile[margin:margin + h, margin:margin + w, :3]
    box[...] = box * 0.25 + 0.75 * np.float32(0.97)
    box[pad:pad + mask.shape[0], pad:pad + mask.shape[1]][mask] = np.float32(0.08)


class _Saved:
    """Set attributes and remember the old values, to put them back in reverse order."""

    def __init__(self) -> None:
        self._items: list[tuple[object, str, object]] = []

    def set(self, owner, attr: str, value) -> None:
        self.set_all(owner, **{attr: value})

    def set_all(self, owner, **values) -> None:
        """Remember all the old values first (setting one may change another, e.g. a file format
        its colour depth), then set them in the order given."""
        for attr in values:
            old = getattr(owner, attr)
            if not (isinstance(old, (int, float, str, bool)) or old is None):
                old = tuple(old)  # bpy arrays (e.g. colours): keep a copy
            self._items.append((owner, attr, old))
        for attr, value in values.items():
            setattr(owner, attr, value)

    def restore(self) -> None:
        # Reverse order, twice: a value that depends on another (a colour depth on its file
        # format, a look on its view transform) may be refused or reset by the first pass.
        for _ in range(2):
            for owner, attr, old in reversed(self._items):
                try:
                    setattr(owner, attr, old)
                except (AttributeError, TypeError, ValueError):
                    pass
        self._items.clear()


def png_pixels(bpy, path: str) -> np.ndarray:
    """Pixels (h, w, 4) float32 of a PNG as Blender reads it, bottom row first (Blender's order)."""
    img = bpy.data.images.load(path, check_existing=False)
    try:
        w, h = img.size
        buf = np.empty(w * h * 4, dtype=np.float32)
        img.pixels.foreach_get(buf)
    finally:
        bpy.data.images.remove(img)
    return buf.reshape(h, w, 4)


def _read_png(bpy, path: str, width: int, height: int) -> np.ndarray:
    """Pixels (height, width, 4) float32 of a PNG, bottom row first (Blender's order)."""
    px = png_pixels(bpy, path)
    h, w = px.shape[:2]
    if (w, h) != (width, height):  # should not happen; pad or crop so the grid stays regular
        out = np.zeros((height, width, 4), np.float32)
        out[..., 3] = 1.0
        out[:min(h, height), :min(w, width)] = px[:height, :width]
        px = out
    return px


def save_png(pixels: np.ndarray, out_path: str, *, name: str = "jakobsen_png") -> str:
    """Save pixels (h, w, 4) float32 in [0, 1], top row first, as an 8-bit RGBA PNG via bpy."""
    import bpy

    h, w = pixels.shape[:2]
    out_path = os.path.abspath(out_path)
    os.makedirs(os.path.dirname(out_path) or ".", exist_ok=True)
    img = bpy.data.images.new(name, width=w, height=h, alpha=True, float_buffer=False)
    try:
        flat = np.ascontiguousarray(np.clip(pixels[::-1], 0.0, 1.0), dtype=np.float32).ravel()
        img.pixels.foreach_set(flat)
        img.filepath_raw = out_path
        img.file_format = "PNG"
        img.save()
    finally:
        bpy.data.images.remove(img)
    return out_path


def render_contact_sheet(scene, frames: Iterable[int], out_path: str, *, columns: Optional[int] = None,
                         width: int = 320, height: int = 180, labels: bool = True, gap: int = 2,
                         on_frame: Optional[FrameCallback] = None, view_transform: Optional[str] = "Standard",
                         gap_color=(0.15, 0.15, 0.15)) -> str:
    """Render ``frames`` of ``scene`` with Workbench and write them as one grid PNG; returns its path.

    scene: a ``bpy.types.Scene`` with a camera (``scene.camera``);
    frames: frame numbers, drawn left to right, top to bottom;
    columns: tiles per row (default ceil(sqrt(len(frames))));
    width, height: pixels of one tile; labels: draw the frame number on each tile;
    gap: pixels between tiles (filled with ``gap_color``);
    on_frame(scene, frame): called after ``scene.frame_set(frame)`` and before rendering, to
    change the scene for that frame (e.g. write mesh vertices) when it is not animated itself;
    view_transform: colour management view used while rendering (None keeps the scene's).

    The sheet is ``columns * width + (columns - 1) * gap`` pixels wide and
    ``rows * height + (rows - 1) * gap`` high. The scene's current frame and the render settings
    changed here are restored afterwards.
    """
    import bpy

    frames = [int(f) for f in frames]
    if not frames:
        raise ValueError("render_contact_sheet: no frames to render")
    if scene.camera is None:
        raise ValueError(f"render_contact_sheet: scene '{scene.name}' has no camera; add one and set scene.camera")
    if width < 1 or height < 1:
        raise ValueError(f"render_contact_sheet: tile size must be positive, got {width}x{height}")
    columns = int(columns) if columns else math.ceil(math.sqrt(len(frames)))
    columns = max(1, min(columns, len(frames)))
    rows = math.ceil(len(frames) / columns)

    render = scene.render
    images_before = {image.as_pointer() for image in bpy.data.images}
    saved = _Saved()
    old_frame, old_subframe = scene.frame_current, scene.frame_subframe
    tmpdir = tempfile.mkdtemp(prefix="jakobsen_sheet_")
    sheet = np.empty((rows * height + (rows - 1) * gap, columns * width + (columns - 1) * gap, 4), np.float32)
    sheet[..., :3] = np.asarray(gap_color, np.float32)
    sheet[..., 3] = 1.0
    try:
        saved.set(render, "engine", "BLENDER_WORKBENCH")
        saved.set(render, "resolution_x", width)
        saved.set(render, "resolution_y", height)
        saved.set(render, "resolution_percentage", 100)
        saved.set(render, "pixel_aspect_x", 1.0)
        saved.set(render, "pixel_aspect_y", 1.0)
        saved.set(render, "use_border", False)
        saved.set(render, "film_transparent", False)
        saved.set(render, "use_file_extension", True)
        # Render the 3D scene itself: no compositor, sequencer strips, stamp or stereo views.
        for attr in ("use_compositing", "use_sequencer", "use_stamp", "use_multiview"):
            if hasattr(render, attr):
                saved.set(render, attr, False)
        saved.set(render, "filepath", os.path.join(tmpdir, "frame"))
        saved.set_all(render.image_settings, file_format="PNG", color_mode="RGBA", color_depth="8")
        if view_transform is not None:
            saved.set_all(scene.view_settings, look="None", view_transform=view_transform, exposure=0.0, gamma=1.0)

        for k, frame in enumerate(frames):
            scene.frame_set(frame)
            if on_frame is not None:
                on_frame(scene, frame)
            path = os.path.join(tmpdir, f"frame_{k:04d}.png")
            render.filepath = path
            _render_still(bpy, scene)
            if not os.path.exists(path):
                raise RuntimeError(f"render_contact_sheet: Blender did not write frame {frame} to {path}")
            tile = _read_png(bpy, path, width, height)[::-1].copy()  # top row first
            tile[..., 3] = 1.0
            if labels:
                draw_label(tile, str(frame))
            r, c = divmod(k, columns)
            y, x = r * (height + gap), c * (width + gap)
            sheet[y:y + height, x:x + width] = tile
        return save_png(sheet, out_path, name="jakobsen_contact_sheet")
    finally:
        saved.restore()
        scene.frame_set(old_frame, subframe=old_subframe)
        shutil.rmtree(tmpdir, ignore_errors=True)
        _remove_new_images(bpy, images_before)


def _remove_new_images(bpy, before: set) -> None:
    """Remove the images rendering made appear (the "Render Result" image, which Blender creates on
    the first render of a session that has none, e.g. after loading an empty factory file)."""
    for image in [image for image in bpy.data.images if image.as_pointer() not in before]:
        if image.type in {'RENDER_RESULT', 'COMPOSITING'}:
            bpy.data.images.remove(image)


def _render_still(bpy, scene) -> None:
    """Render ``scene`` (not necessarily the window's scene) to ``scene.render.filepath``."""
    window = bpy.context.window
    if window is not None and window.scene != scene:
        with bpy.context.temp_override(window=window, scene=scene):
            bpy.ops.render.render(write_still=True, scene=scene.name)
    else:
        bpy.ops.render.render(write_still=True, scene=scene.name)


ROW_TILE = (320, 180)


def render_row(bpy, scene, object_names, out_path: str, frames, *, tile=ROW_TILE) -> str:
    """Render ``frames`` of ``scene`` side by side into the PNG ``out_path`` (one row, frame numbers
    on the tiles); returns its path. Through the scene's camera, or, when it has none, a
    temporary one (removed afterwards) that frames ``object_names`` as they are on the first of
    ``frames``, from the front and above: the same view for every job of a wedge, so that their
    rows compare."""
    frames = [int(f) for f in frames]
    made = None
    if scene.camera is None:
        made = _framing_camera(bpy, scene, object_names, frames[:1])
    try:
        return render_contact_sheet(scene, frames, out_path, columns=len(frames), width=tile[0], height=tile[1],
                                    labels=True)
    finally:
        if made is not None:
            scene.camera = None
            data = made.data
            bpy.data.objects.remove(made)
            bpy.data.cameras.remove(data)


def _framing_camera(bpy, scene, object_names, frames):
    from mathutils import Vector

    old = scene.frame_current, scene.frame_subframe
    corners = []
    try:
        for frame in frames:
            scene.frame_set(frame)
            depsgraph = bpy.context.evaluated_depsgraph_get()
            for name in object_names:
                obj = bpy.data.objects.get(name)
                if obj is None:
                    continue
                ev = obj.evaluated_get(depsgraph)
                corners += [ev.matrix_world @ Vector(c) for c in ev.bound_box]
    finally:
        scene.frame_set(old[0], subframe=old[1])
    if not corners:
        corners = [Vector((-1.0, -1.0, 0.0)), Vector((1.0, 1.0, 1.0))]
    data = bpy.data.cameras.new("JK Sheet Camera")
    camera = bpy.data.objects.new("JK Sheet Camera", data)
    scene.collection.objects.link(camera)
    # From the front (-Y), a little to the right and above, as one looks at a scene first.
    view = Vector((0.45, -1.0, 0.55)).normalized()
    camera.rotation_euler = (-view).to_track_quat('-Z', 'Y').to_euler()
    scene.camera = camera
    depsgraph = bpy.context.evaluated_depsgraph_get()
    flat = [v for c in corners for v in c]
    location, _scale = camera.camera_fit_coords(depsgraph, flat)
    centre = sum(corners, Vector()) / len(corners)
    camera.location = centre + (Vector(location) - centre) * 1.15  # a margin round the action
    data.clip_end = max(100.0, 4.0 * (Vector(location) - centre).length)
    return camera
