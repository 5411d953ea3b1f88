"""What a bake job leaves beside its baked .blend: a JSON report with a checksum of the baked values.

The checksum is of what was written into Blender, read back from it: every baked shape key's
coordinates and the F-curves that play them, every rigid body's transform F-curves, every PC2
file's bytes, and the vertices of the mesh each deforming object ends with (a torn cloth's is
split). Two bakes with the same checksum render the same. Times are left out of it (they are in
the report, next to it).
"""

from __future__ import annotations

import hashlib
import json
import os

import numpy as np


def _fcurve_bytes(fcurves) -> list[bytes]:
    out = []
    for fc in sorted(fcurves or (), key=lambda c: (c.data_path, c.array_index)):
        points = np.empty(len(fc.keyframe_points) * 2, np.float32)
        fc.keyframe_points.foreach_get("co", points)
        out += [f"{fc.data_path}[{fc.array_index}]".encode(), points.tobytes()]
    return out


def baked_checksum(bpy, object_names, cache_directory: str = "") -> str:
    """sha256 of the baked values of ``object_names`` (in the open file), as "sha256:<hex>"."""
    from jakobsen_physics import actions, baking

    digest = hashlib.sha256()
    for name in sorted(object_names):
        obj = bpy.data.objects.get(name)
        digest.update(name.encode())
        if obj is None:
            digest.update(b"<missing>")
            continue
        digest.update(obj.type.encode())
        parts = _fcurve_bytes(actions.assigned_fcurves(obj))
        if obj.type == 'MESH':
            mesh = obj.data
            co = np.empty(len(mesh.vertices) * 3, np.float32)
            mesh.vertices.foreach_get("co", co)
            parts.append(co.tobytes())
            keys = mesh.shape_keys
            if keys is not None:
                for block in keys.key_blocks:
                    if block.name.startswith("JK_Bake_"):
                        co = np.empty(len(block.data) * 3, np.float32)
                        block.data.foreach_get("co", co)
                        parts += [block.name.encode(), co.tobytes()]
                parts += _fcurve_bytes(actions.assigned_fcurves(keys))
            record = baking.record_of(obj) or {}
            if record.get("output") == 'PC2':
                path = record.get("file") or baking.pc2_path(obj, cache_directory)
                if os.path.isfile(path):
                    with open(path, "rb") as f:
                        parts += [b"pc2", f.read()]
        for part in parts:
            digest.update(len(part).to_bytes(8, "little"))
            digest.update(part)
    return "sha256:" + digest.hexdigest()


def write_json(path: str, data: dict) -> str:
    """Write ``data`` as indented JSON to ``path``, atomically (a rerun job rewrites it whole)."""
    path = os.path.abspath(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, sort_keys=False, default=_jsonable)
        f.write("\n")
    os.replace(tmp, path)
    return path


def _jsonable(value):
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    if isinstance(value, (np.ndarray, tuple, set)):
        return list(value.tolist() if isinstance(value, np.ndarray) else value)
    return str(value)
