#!/usr/bin/python3
"""Compiles a model once for shape ranges and checks the one artifact against
ONNX Runtime at every shape of a sweep.

    sweep_shapes.py --kiln KILN --model M.onnx --min-shapes S --opt-shapes S --max-shapes S
                    --at SHAPES [--at SHAPES ...] [--tolerance T] [--target cpu] [--work DIR]
                    [--compile-arg ARG ...] [--expect-symbols N] [--emulate KERNELS_TOOL DRIVER]

S and SHAPES are in `kiln compile`'s form (name:1x3x64x64,name2:1x17). Each
--at binds every dynamic input; the inputs are seeded, drawn from the zoo
manifest's ranges for zoo models (<name>[-b<N>|-dyn]-<form>.onnx) and from
the file's declared types otherwise. One `kiln compile` writes the artifact;
`kiln run` runs it at each shape and ONNX Runtime runs the model on the same
inputs. Measures max|kiln - ort| / max|ort| per output and shape, at most T
(the manifest's tolerance by default, else 1e-4), and that outputs have
ONNX Runtime's shapes. --expect-symbols checks how many dynamic dims the
artifact serves (kiln inspect on the artifact). --emulate runs a CUDA
artifact (--target cuda:sm_NN) on the CPU emulation of its kernels, as
compare_with_ort.py does. Exits 1 on any mismatch.
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import zoo  # noqa: E402
from compare_with_ort import relative_error  # noqa: E402


def check_at(args, artifact, outputs, shapes, tolerance, index):
    """Runs the artifact and ONNX Runtime at `shapes`; prints a line per output; True when all agree."""
    specs = {name: dict(s) for name, s in zoo.input_specs(args.model).items()}
    for name, dims in shapes.items():
        if name not in specs:
            raise SystemExit(f"--at names no input '{name}' (inputs: {', '.join(specs)})")
        specs[name]["shape"] = dims
    work = os.path.join(args.work, f"at{index}")
    paths = zoo.make_inputs(specs, work, seed=index)
    kiln_dir, ort_dir = os.path.join(work, "kiln"), os.path.join(work, "ort")
    run = subprocess.run([args.kiln, "run", artifact, "--output-dir", kiln_dir] + zoo.input_args(paths),
                         capture_output=True, text=True)
    parts = [f"{n}:{'x'.join(map(str, d))}" for n, d in shapes.items()]
    label = ",".join(parts[:2]) + (f" (+{len(parts) - 2} inputs)" if len(parts) > 2 else "")
    if run.returncode != 0:
        print(f"{label}: kiln run failed:\n{run.stderr}")
        return False
    zoo.run_ort(args.model, paths, ort_dir)
    ok = True
    for out in outputs:
        a, b = zoo.load_output(kiln_dir, out), zoo.load_output(ort_dir, out)
        if a.dtype != b.dtype or a.shape != b.shape:
            print(f"{label} {out}: {a.dtype}{list(a.shape)} vs ONNX Runtime {b.dtype}{list(b.shape)} FAILED")
            ok = False
            continue
        err, scale, rel = relative_error(a, b)
        good = rel <= tolerance
        ok &= good
        print(f"{label} {out}: {list(a.shape)} max abs diff {err:.3g}, scale {scale:.3g}, relative {rel:.3g} "
              f"(tolerance {tolerance:g}) {'ok' if good else 'FAILED'}")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True, help="the kiln executable")
    ap.add_argument("--model", required=True)
    for point in ("min", "opt", "max"):
        ap.add_argument(f"--{point}-shapes", required=point != "opt", help="kiln compile's range option")
    ap.add_argument("--at", action="append", required=True, metavar="SHAPES",
                    help="one shape of the sweep: every dynamic input's dims (repeatable)")
    ap.add_argument("--tolerance", type=float, help="override the manifest's tolerance (default 1e-4)")
    ap.add_argument("--target", default="cpu")
    ap.add_argument("--work", default=None, help="directory for the artifact, inputs and outputs")
    ap.add_argument("--compile-arg", action="append", default=[], help="extra argument for `kiln compile` (repeatable)")
    ap.add_argument("--expect-symbols", type=int, help="the number of dynamic dims the artifact must serve")
    ap.add_argument("--emulate", nargs=2, metavar=("KERNELS_TOOL", "DRIVER"),
                    help="run a CUDA artifact on the CPU emulation: kiln-emulation-kernels builds the model's kernels "
                         "for the ranges, DRIVER (libkiln_emulated_cuda.so) stands in for libcuda")
    args = ap.parse_args()
    name = os.path.splitext(os.path.basename(args.model))[0]
    args.work = args.work or os.path.join(os.getcwd(), "sweep_" + name)
    os.makedirs(args.work, exist_ok=True)
    artifact = os.path.join(args.work, name + ".kiln")
    ranges = []
    for point in ("min", "opt", "max"):
        value = getattr(args, f"{point}_shapes")
        if value:
            ranges += [f"--{point}-shapes", value]
    if args.emulate:
        tool, driver = args.emulate
        kernels = subprocess.run([tool, args.model, os.path.join(args.work, "emulation"), "f32", "off"] + ranges,
                                 capture_output=True, text=True)
        if kernels.returncode != 0:
            print(f"{name}: kiln-emulation-kernels failed:\n{kernels.stderr}")
            sys.exit(1)
        os.environ["KILN_CUDA_DRIVER"] = driver
        os.environ["KILN_EMULATED_KERNELS"] = kernels.stdout.strip().splitlines()[-1]
        args.compile_arg = ["--library-tactics=off"] + args.compile_arg
    built = subprocess.run([args.kiln, "compile", args.model, "--target", args.target, "-o", artifact, "--quiet"] + ranges +
                           args.compile_arg, capture_output=True, text=True)
    if built.returncode != 0:
        print(f"{name}: kiln compile failed:\n{built.stderr}")
        sys.exit(1)
    print(built.stdout.strip())
    if args.expect_symbols is not None:
        inspected = subprocess.run([args.kiln, "inspect", artifact, "--json"], capture_output=True, text=True)
        symbols = json.loads(inspected.stdout or "{}").get("dynamic_dims", {})
        if len(symbols) != args.expect_symbols:
            print(f"{name}: the artifact serves dynamic dims {symbols}, expected {args.expect_symbols}:\n"
                  f"{inspected.stdout}{inspected.stderr}")
            sys.exit(1)
    import onnx
    outputs = [o.name for o in onnx.load(args.model, load_external_data=False).graph.output]
    spec = zoo.zoo_spec_for(args.model) or {}
    tolerance = args.tolerance if args.tolerance is not None else spec.get("tolerance", 1e-4)
    ok = True
    for i, at in enumerate(args.at):
        ok &= check_at(args, artifact, outputs, zoo.parse_shapes(at), tolerance, i)
    print(f"{name}: one artifact, {len(args.at)} shapes: {'ok' if ok else 'FAILED'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
