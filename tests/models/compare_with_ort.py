#!/usr/bin/python3
"""Runs a model through `kiln run` and ONNX Runtime on the same seeded random
inputs and compares every output.

    compare_with_ort.py --kiln KILN --model M.onnx [--shape name:dims] [--tolerance T] [--work DIR]
                        [--shapes-only]

The error measure is max|kiln - ort| / max|ort| per output (relative to the
output's scale, so values near zero do not dominate); it must be <= T.
With --shapes-only, only shapes and element types are compared (for outputs
whose order is not well defined, such as detections among tied scores).
Prints one line per output with the measured error.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import onnx

NP_TYPES = {1: np.float32, 11: np.float64, 7: np.int64, 6: np.int32, 9: np.bool_, 2: np.uint8, 3: np.int8}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--shape", action="append", default=[], help="name:1x3x224x224 for dynamic inputs")
    ap.add_argument("--tolerance", type=float, default=1e-4)
    ap.add_argument("--work", default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shapes-only", action="store_true", help="compare shapes and dtypes, not values")
    args = ap.parse_args()
    name = os.path.splitext(os.path.basename(args.model))[0]
    work = args.work or os.path.join(os.getcwd(), "compare_" + name)
    os.makedirs(work, exist_ok=True)
    bindings = {s.split(":")[0]: [int(d) for d in s.split(":")[1].split("x")] for s in args.shape}
    model = onnx.load(args.model, load_external_data=False)
    initializers = {i.name for i in model.graph.initializer}
    rng = np.random.RandomState(args.seed)
    kiln_cmd = [args.kiln, "run", args.model, "--output-dir", os.path.join(work, "kiln")]
    ort_cmd = ["node", os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "ort_reference.js"), args.model,
               "--output-dir", os.path.join(work, "ort")]
    for inp in model.graph.input:
        if inp.name in initializers:
            continue
        tt = inp.type.tensor_type
        dims = bindings.get(inp.name) or [d.dim_value if d.HasField("dim_value") else 1 for d in tt.shape.dim]
        dtype = NP_TYPES[tt.elem_type]
        data = rng.randn(*dims).astype(dtype) if np.issubdtype(dtype, np.floating) else rng.randint(0, 10, dims).astype(dtype)
        path = os.path.join(work, inp.name.replace("/", "_") + ".npy")
        np.save(path, data)
        kiln_cmd += ["--input", f"{inp.name}={path}"]
        ort_cmd += ["--input", f"{inp.name}={path}"]
    subprocess.run(kiln_cmd, check=True, stdout=subprocess.DEVNULL)
    ort = subprocess.run(ort_cmd, check=True, capture_output=True, text=True)
    ok = True
    for out in model.graph.output:
        fname = "".join(c if c.isalnum() or c in "_.-" else "_" for c in out.name) + ".npy"
        a = np.load(os.path.join(work, "kiln", fname))
        b = np.load(os.path.join(work, "ort", fname))
        if a.shape != b.shape or a.dtype != b.dtype:
            print(f"{name}/{out.name}: {a.dtype}{list(a.shape)} vs ONNX Runtime {b.dtype}{list(b.shape)}")
            ok = False
            continue
        if args.shapes_only:
            print(f"{name}/{out.name}: {a.dtype}{list(a.shape)} as ONNX Runtime (values not compared)")
            continue
        scale = float(np.abs(b).max()) if b.size else 0.0
        err = float(np.abs(a.astype(np.float64) - b.astype(np.float64)).max()) if b.size else 0.0
        rel = err / scale if scale > 0 else err
        good = rel <= args.tolerance
        ok &= good
        print(f"{name}/{out.name}: {list(a.shape)} max abs diff {err:.3g}, scale {scale:.3g}, "
              f"relative {rel:.3g} (tolerance {args.tolerance:g}) {'ok' if good else 'FAILED'}")
    print(f"onnxruntime: {json.loads(ort.stdout.strip().splitlines()[-1])['mean_ms']:.1f} ms")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
