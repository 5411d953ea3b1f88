"""The same scene bakes to the same numbers on every Blender version ``./run test`` sets up.

Each environment beside the checkout (``.venv``, ``.venv-bpy42``, ``.venv-bpy45``,
``.venv-bpy52``: Blender 4.2 to 5.3, numpy 1.26 to 2.x, Python 3.11 and 3.13) bakes the
examples with its own ``jakobsen bake``; the checksums of the baked values (every shape key
coordinate and F-curve point as Blender holds it) must agree. Skipped where fewer than two of
those environments exist (a checkout that has not run ``./run test``), and in every run but
the main environment's (it needs doing once).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.blender

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENVIRONMENTS = (".venv", ".venv-bpy42", ".venv-bpy45", ".venv-bpy52")
# Bit-identical on every version, numpy 1.26 and 2.x alike: cloth, and rigid bodies in contact
# (whose numpy-side arithmetic avoids what changes its last bits between numpy releases: see
# ``jakobsen_engine.geometry.reproducible``).
EXAMPLES = ("flag", "rigid_boxes", "car", "tablecloth", "follow_path", "trailer")


def _blenders() -> dict[str, tuple[str, str]]:
    """{Blender version: (its environment's python, its numpy version)} of the environments that
    have Blender."""
    found = {}
    for name in ENVIRONMENTS:
        python = os.path.join(REPO, name, "bin", "python")
        if not os.path.isfile(python):
            continue
        done = subprocess.run([python, "-c", "import numpy, bpy, os, sys; "
                               "print('BLENDER', numpy.__version__, bpy.app.version_string, flush=True); "
                               "os._exit(0)"], capture_output=True, text=True, timeout=120)
        line = next((t for t in done.stdout.splitlines() if t.startswith("BLENDER ")), None)
        if line:
            _, numpy_version, version = line.split(" ", 2)
            found.setdefault(version, (python, numpy_version))
    return found


@pytest.fixture(scope="module")
def blenders():
    if os.path.realpath(sys.prefix) != os.path.realpath(os.path.join(REPO, ".venv")):
        pytest.skip("compares every version once, from the main environment (.venv)")
    found = _blenders()
    if len(found) < 2:
        pytest.skip(f"needs two or more of {', '.join(ENVIRONMENTS)} with Blender (./run test makes them)")
    return found


def _bake(python: str, example: str, out) -> str:
    done = subprocess.run([python, "-m", "jakobsen_tools", "bake", os.path.join(REPO, "blend_examples",
                                                                              f"{example}.blend"),
                           "-o", str(out), "--every", "100000"], capture_output=True, text=True, timeout=900,
                          cwd=REPO)
    assert done.returncode == 0, f"{python}: {done.stderr[-2000:]}"
    with open(out.with_suffix(".json"), encoding="utf-8") as f:
        return json.load(f)["checksum"]


@pytest.mark.parametrize("example", EXAMPLES)
def test_an_example_bakes_bit_identical_on_every_blender_version(blenders, example, tmp_path):
    checksums = {}
    for version, (python, numpy_version) in blenders.items():
        checksums[f"{version} (numpy {numpy_version})"] = _bake(
            python, example, tmp_path / version.replace(" ", "_") / f"{example}.blend")
    assert len(set(checksums.values())) == 1, checksums
