"""The modal bake in the real Blender GUI, with real timer events and a real Esc key (opt-in).

Runs ``tests/gui/modal_bake.py`` through ``../shared/tools/blender-gui`` (needs root; the first run
builds a Debian root with Blender 4.3, a few minutes). Enable with ``JAKOBSEN_GUI=1``; the
screenshots land in ``gui-out/``.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
TOOL = REPO.parent / "shared" / "tools" / "blender-gui"

pytestmark = [
    pytest.mark.blender,
    pytest.mark.slow,
    pytest.mark.skipif(os.environ.get("JAKOBSEN_GUI") != "1", reason="opt-in: set JAKOBSEN_GUI=1"),
    pytest.mark.skipif(not TOOL.exists(), reason=f"{TOOL} is not there"),
]


def test_modal_bake_in_the_gui_cancels_cleanly_and_then_bakes():
    out = REPO / "gui-out"
    result_file = out / "result.json"
    result_file.unlink(missing_ok=True)
    subprocess.run([str(TOOL), "tests/gui/modal_bake.py", str(out), "900"], cwd=REPO, check=True, timeout=1500)
    result = json.loads(result_file.read_text())
    assert result["invoke_1"] == ["RUNNING_MODAL"]
    # Half way: the scene is on a computed frame, the cloth's stand-in shows it, the original is hidden.
    # (Base and Wheel, joined by the connector, are dynamic rigid bodies: they get stand-ins too.)
    assert result["mid_bake"]["frame"] > 1
    assert sorted(result["mid_bake"]["previews"]) == ["Base", "Curtain", "Wheel"]
    assert result["mid_bake"]["objects_added"] == [] and not result["mid_bake"]["draw_errors"]
    assert result["mid_bake"]["curtain_hidden"]
    assert result["cancel_restored_everything"]
    after = result["after_bake"]
    assert after["record"] and after["shape_keys"] == 49 and "JK_Bake Curtain" in after["actions"]
    assert not after["hidden"]
    for name in ("physics_curtain", "physics_connector", "scene_tab", "sidebar", "modal_bake_running"):
        assert (out / f"{name}.png").stat().st_size > 10_000
