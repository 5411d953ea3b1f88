"""The ``jakobsen`` command: headless jobs that run the engine and real Blender (bpy)."""

from __future__ import annotations

import argparse
import os
import sys


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (default: this program's arguments); returns the exit status."""
    from jakobsen_engine import __version__

    parser = argparse.ArgumentParser(prog="jakobsen", description="Jakobsen Physics for Blender")
    parser.add_argument("--version", action="version", version=f"jakobsen-physics {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    bake = sub.add_parser(
        "bake", help="bake .blend files headless and save the results (several, or wedges: on Dask)",
        description="Open SCENE.blend, bake its Jakobsen Physics objects and save the result. Several scenes, "
                    "or --wedge values, make one job per scene and combination, run on Dask distributed (a "
                    "LocalCluster here, or --scheduler), each in a Blender process of its own.")
    bake.add_argument("scene", metavar="SCENE.blend", nargs="+", help="the .blend file(s) to bake")
    bake.add_argument("-o", "--out", metavar="OUT",
                      help="one job: where to save the baked file (default: SCENE_baked.blend next to SCENE); "
                           "several: the folder for all outputs (default: jakobsen_bakes next to the first SCENE)")
    bake.add_argument("--frames", metavar="START-END",
                      help="frames to bake (default: the scene's bake range, Scene > Jakobsen Physics > Bake)")
    bake.add_argument("--scene", dest="scene_name", metavar="NAME", help="the scene to bake (default: the active one)")
    bake.add_argument("--every", type=int, default=10, metavar="N", help="print progress every N frames (default 10)")
    bake.add_argument("--wedge", action="append", default=[], metavar="OBJECT.path.to.prop=V1,V2",
                      help="bake with each of these values of an object's (or scene's) property, e.g. "
                           "Flag.jakobsen.cloth.stiffness=100,1000 (repeatable: every combination is baked; "
                           "vector values as \"0 0 -9.81\")")
    bake.add_argument("--workers", type=int, metavar="N",
                      help="Dask LocalCluster workers (default: the number of cores); runs on Dask even for one job")
    bake.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                      help="run the jobs on this Dask cluster instead of a LocalCluster (outputs must be on a disk "
                           "every worker reaches)")
    bake.add_argument("--checkpoint-every", type=int, default=0, metavar="N",
                      help="save the solver's state every N frames (OUT.blend.checkpoint), to --resume from")
    bake.add_argument("--resume", action="store_true",
                      help="continue a stopped bake from its checkpoint (from the start if it has none)")
    bake.add_argument("--alembic", metavar="OUT.abc", help="also write the baked animation as Alembic "
                                                           "(several jobs: OUT__JOB.abc each)")
    bake.add_argument("--usd", metavar="OUT.usdc", help="also write the baked animation as USD "
                                                        "(several jobs: OUT__JOB.usdc each)")
    bake.add_argument("--sheet", metavar="OUT.png", help=argparse.SUPPRESS)  # a job's row of the farm's sheet
    bake.add_argument("--sheet-frames", metavar="F1,F2,...",
                      help="frames shown per job on the contact sheet (default: four across the range)")
    bake.add_argument("--cache-dir", metavar="DIR", help="where PC2 point caches go (default: the scene's setting)")

    build = sub.add_parser("build", help="write the Blender extension zip (Install from Disk)")
    build.add_argument("-o", "--out", default="dist", metavar="DIR", help="directory for the zips (default dist)")
    build.add_argument("--platform", action="append",
                       choices=["linux-x64", "windows-x64", "macos-arm64", "none", "all"],
                       help="the zips with numba for this platform, one per Blender Python (3.11: Blender 4.2 to "
                            "5.0; 3.13: 5.1 on) (repeatable; 'none': the one without it, numpy "
                            "kernels on any platform; 'all': every one; default all)")

    bench = sub.add_parser("bench", help="print a benchmark table, side by side with Blender's own solver")
    bench.add_argument("what", choices=["cloth", "cloth-large", "boxes", "car", "tablecloth", "self-collision", "all"],
                       help="which benchmark")
    bench.add_argument("--frames", type=int, default=100, help="frames to simulate (default 100)")
    bench.add_argument("--repeats", type=int, default=3,
                       help="cloth: runs of each solver; the best is kept (default 3)")
    bench.add_argument("--grid", type=int, default=10, help="boxes: boxes per side of the grid (default 10)")

    demo = sub.add_parser("demo", help="bake the example scenes headless and write a contact sheet PNG")
    demo.add_argument("-o", "--out", default="out/demo.png", help="where to write the PNG (default out/demo.png)")
    demo.add_argument("--engine", action="store_true",
                      help="the engine-only demo instead: a pinned cloth simulated without the add-on")

    args = parser.parse_args(argv)
    code = 0
    if args.command == "bake":
        from .bake import run_bake

        code = run_bake(args)
    elif args.command == "build":
        from .build import BuildError, run_build

        try:
            run_build(args.out, args.platform or ["all"])
        except BuildError as error:
            print(f"jakobsen build: error: {error}", file=sys.stderr)
            code = 1
    elif args.command == "bench":
        what = ("cloth", "cloth-large", "boxes", "car", "tablecloth", "self-collision") if args.what == "all" \
            else (args.what,)
        for name in what:
            if name == "boxes":
                from .bench_boxes import run_boxes_benchmark

                run_boxes_benchmark(frames=args.frames, grid=args.grid)
            elif name == "car":
                from .bench_car import run_car_benchmark

                run_car_benchmark()
            elif name == "tablecloth":
                from .bench_cloth_collision import run_tablecloth_benchmark

                run_tablecloth_benchmark()
            elif name == "self-collision":
                from .bench_cloth_collision import run_self_collision_benchmark

                run_self_collision_benchmark()
            elif name == "cloth-large":
                from .bench import run_large_cloth_benchmark

                run_large_cloth_benchmark()
            else:
                from .bench import run_cloth_benchmark

                run_cloth_benchmark(frames=args.frames, repeats=args.repeats)
            print(flush=True)
    elif args.command == "demo":
        if args.engine:
            from .demo import run_engine_demo

            run_engine_demo(args.out)
        else:
            from .demo import run_demo

            run_demo(args.out)
    if argv is None:
        _exit_process(code)
    return code


def _exit_process(code: int) -> None:
    """bpy 4.x goes wrong in its C exit handlers once the add-on has been registered, after all our
    work is done and saved: 4.2 crashes (a property with a Python callback), 4.5 waits forever (a
    condition variable in a global destructor). As a program (not when ``main`` is called from
    Python), end the process before those handlers run."""
    bpy = sys.modules.get("bpy")
    if bpy is not None and tuple(bpy.app.version) < (5, 0, 0):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
