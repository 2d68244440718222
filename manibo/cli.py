"""The ``manibo`` command line: ``manibo demo`` runs the main demonstration, ``manibo info`` the versions."""

from __future__ import annotations

import argparse
import platform
from pathlib import Path

import torch


def _info(_: argparse.Namespace) -> int:
    import botorch
    import gpytorch

    import manibo

    print(f"manibo {manibo.__version__}")
    print(f"python {platform.python_version()} on {platform.machine()} ({platform.system()})")
    print(f"torch {torch.__version__}, gpytorch {gpytorch.__version__}, botorch {botorch.__version__}")
    cuda = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    print(f"CUDA device: {cuda}; CPU threads: {torch.get_num_threads()}")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from manibo.demos.sphere_regression import run

    run(Path(args.out), num_train=args.num_train, seed=args.seed, device=args.device)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``manibo`` command."""
    parser = argparse.ArgumentParser(prog="manibo", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    info = sub.add_parser("info", help="print versions and the compute device")
    info.set_defaults(func=_info)
    demo = sub.add_parser("demo", help="run the demonstration on the globe")
    demo.add_argument("--out", default="demo-output", help="directory for figures and JSON")
    demo.add_argument("--num-train", type=int, default=150, help="number of noisy observations")
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--device", default="cpu", help="cpu or cuda")
    demo.set_defaults(func=_demo)
    args = parser.parse_args(argv)
    return args.func(args)
