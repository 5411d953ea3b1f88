"""The ``jakobsen`` command: headless jobs that run the engine and real Blender (bpy)."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    from engine import __version__

    parser = argparse.ArgumentParser(prog="jakobsen", description="Jakobsen Physics for Blender")
    parser.add_argument("--version", action="version", version=f"jakobsen-physics {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    bench = sub.add_parser("bench", help="print a benchmark table, side by side with Blender's own solver")
    bench.add_argument("what", choices=["cloth"], help="which benchmark")
    bench.add_argument("--frames", type=int, default=100, help="frames to simulate (default 100)")
    bench.add_argument("--repeats", type=int, default=3, help="runs of each solver; the best is kept (default 3)")

    demo = sub.add_parser("demo", help="simulate a pinned cloth and write a contact sheet PNG")
    demo.add_argument("-o", "--out", default="out/demo.png", help="where to write the PNG")

    args = parser.parse_args(argv)
    if args.command == "bench":
        from .bench import run_cloth_benchmark

        run_cloth_benchmark(frames=args.frames, repeats=args.repeats)
    elif args.command == "demo":
        from .demo import run_demo

        run_demo(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
