#!/usr/bin/python3
"""Runs a model through `kiln run` and ONNX Runtime on the same seeded inputs
and compares every output.

    compare_with_ort.py --kiln KILN --model M.onnx [--shape name:dims] [--range name:low:high] [--tolerance T]
                        [--work DIR] [--kiln-arg ARG ...] [--compile-arg ARG ...]
                        [--detections BOXES,SCORES,LABELS[,PER_DETECTION...] [--min-matched F]]

Zoo models (<name>-<form>.onnx, models/zoo.json) take inputs (as --shape
too, where exported with dynamic axes), tolerance and detection rule from
the manifest; others, inputs of their declared types (dynamic dims from
--shape, else 1). --detections names a detector's box, score and label
outputs for the detection rule below (any detector: RetinaNet, FCOS, ...;
it overrides the manifest's), --min-matched its share (default 0.98). Names after the third
are per-detection outputs (Mask R-CNN's masks, keypoints): row i belongs to
detection i, so they are compared detection by detection along the matching.

Measures: values, max|kiln - ort| / max|ort| per output, at most T; detections,
matched greedily (detection_pairs), the matched share at least min_matched.
Prints one line per output with the measured error; exits 1 on a mismatch,
77 (skipped) for a CUDA target on a machine without a GPU. --emulate runs a
CUDA artifact on the CPU emulation of its kernels (the emulated driver;
with --compile-arg=--library-tactics, its library steps run on the cuBLASLt
and cuDNN emulations KILN_CUBLASLT and KILN_CUDNN name).
"""
import argparse
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import zoo  # noqa: E402


def relative_error(a, b):
    """max|a - b| relative to b's scale, so that values near zero do not dominate."""
    scale = float(np.abs(b).max()) if b.size else 0.0
    err = float(np.abs(a.astype(np.float64) - b.astype(np.float64)).max()) if b.size else 0.0
    return err, scale, (err / scale if scale > 0 else err)


def match_detections(kiln, ort, tolerance):
    """Greedy matching; returns (matched, total) where total is the larger count."""
    pairs, total = detection_pairs(kiln, ort, tolerance)
    return len(pairs), total


def detection_pairs(kiln, ort, tolerance):
    """Greedy matching; returns ([(ort index, kiln index), ...], total) where
    total is the larger count. Each ONNX Runtime detection takes an unmatched
    kiln detection of its label whose box and score are within tolerance of the
    output's scale. Order is not required: top-k and NMS may order near-equal
    scores differently, and the raw head outputs (compared as values) check
    the network itself."""
    kb, ks, kl = kiln
    ob, os_, ol = ort
    box_tol = tolerance * max(float(np.abs(ob).max()) if ob.size else 1.0, 1.0)
    score_tol = tolerance * max(float(np.abs(os_).max()) if os_.size else 1.0, 1e-30)
    used = np.zeros(len(kl), dtype=bool)
    pairs = []
    for i in range(len(ol)):
        ok = (~used) & (kl == ol[i]) & (np.abs(ks - os_[i]) <= score_tol) & \
             (np.abs(kb - ob[i]).max(axis=1, initial=0) <= box_tol if len(kb) else np.zeros(0, dtype=bool))
        hits = np.flatnonzero(ok)
        if hits.size:
            used[hits[0]] = True
            pairs.append((i, int(hits[0])))
    return pairs, max(len(ol), len(kl))


def per_detection_error(kiln_values, ort_values, pairs):
    """relative_error over the rows of a per-detection output (masks, keypoints)
    taken in matched pairs, so detections in another order compare as themselves."""
    if not pairs:
        return relative_error(kiln_values[:0], ort_values[:0])
    o, k = zip(*pairs)
    return relative_error(kiln_values[list(k)], ort_values[list(o)])


def check_detection_outputs(names, arrays):
    """ValueError when ONNX Runtime's boxes, scores and labels (named `names`)
    are not float [N, 4], float [N] and integer [N]: a detector whose outputs
    were named in another order (torchvision's are boxes, labels, scores)
    would otherwise be compared as nonsense."""
    want = [("BOXES", "floating", 2), ("SCORES", "floating", 1), ("LABELS", "integer", 1)]
    for (role, kind, rank), name, a in zip(want, names, arrays):
        is_kind = np.issubdtype(a.dtype, np.floating if kind == "floating" else np.integer)
        if not is_kind or a.ndim != rank or (role == "BOXES" and a.shape[1] != 4):
            shape = "[N, 4]" if role == "BOXES" else "[N]"
            raise ValueError(f"--detections: {role} output '{name}' is {a.dtype}{list(a.shape)}, expected {kind} {shape}; "
                             f"the order is BOXES,SCORES,LABELS (outputs by dtype: "
                             f"{', '.join(f'{n} {x.dtype}{list(x.shape)}' for n, x in zip(names, arrays))})")
    if not arrays[0].shape[0] == arrays[1].shape[0] == arrays[2].shape[0]:
        raise ValueError(f"--detections: '{names[0]}', '{names[1]}' and '{names[2]}' hold different numbers of detections "
                         f"({arrays[0].shape[0]}, {arrays[1].shape[0]}, {arrays[2].shape[0]})")


def detection_rule(names, min_matched, outputs):
    """The detection rule of --detections BOXES,SCORES,LABELS[,PER_DETECTION...]:
    a dict like the manifest's; ValueError naming what is wrong."""
    parts = [p.strip() for p in names.split(",")]
    if len(parts) < 3 or not all(parts):
        raise ValueError(f"--detections wants output names BOXES,SCORES,LABELS[,PER_DETECTION...], got '{names}'")
    missing = [p for p in parts if p not in outputs]
    if missing:
        raise ValueError(f"--detections: the model has no output {', '.join(repr(m) for m in missing)} "
                         f"(its outputs: {', '.join(outputs)})")
    if not 0 < min_matched <= 1:
        raise ValueError(f"--min-matched must be in (0, 1], got {min_matched:g}")
    rule = {"boxes": parts[0], "scores": parts[1], "labels": parts[2], "min_matched": min_matched}
    if len(parts) > 3:
        rule["per_detection"] = parts[3:]
    return rule


def has_cuda_device():
    """Whether the NVIDIA driver (or KILN_CUDA_DRIVER's stand-in) is present
    and reports at least one device."""
    import ctypes
    try:
        cuda = ctypes.CDLL(os.environ.get("KILN_CUDA_DRIVER") or "libcuda.so.1")
    except OSError:
        return False
    count = ctypes.c_int(0)
    return cuda.cuInit(0) == 0 and cuda.cuDeviceGetCount(ctypes.byref(count)) == 0 and count.value > 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True, help="the kiln executable")
    ap.add_argument("--model", required=True)
    ap.add_argument("--shape", action="append", default=[], help="name:1x3x224x224 for dynamic inputs")
    ap.add_argument("--range", action="append", default=[], metavar="NAME:LOW:HIGH",
                    help="draw input NAME from [LOW, HIGH) (sr:16000:16001 gives a sample rate of 16000)")
    ap.add_argument("--tolerance", type=float, help="override the manifest's tolerance (default 1e-4)")
    ap.add_argument("--work", default=None, help="directory for inputs and outputs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--kiln-arg", action="append", default=[], help="extra argument for `kiln run` (repeatable)")
    ap.add_argument("--compile-arg", action="append", default=[], help="with --compile: extra argument for `kiln compile` (repeatable)")
    ap.add_argument("--detections", metavar="BOXES,SCORES,LABELS[,PER_DETECTION...]",
                    help="compare these outputs by the detection rule (any detector; overrides the manifest's); "
                         "further names: per-detection outputs (masks), compared along the matching")
    ap.add_argument("--min-matched", type=float, default=0.98,
                    help="with --detections: the share of detections that must match (default 0.98)")
    ap.add_argument("--compile", action="store_true",
                    help="compile with `kiln compile --target T` and run the .kiln artifact instead of the model")
    ap.add_argument("--target", default="cpu", help="with --compile: the target (cpu, cuda[:sm_XX,...])")
    ap.add_argument("--emulate", nargs=2, metavar=("KERNELS_TOOL", "DRIVER"),
                    help="run a CUDA artifact on the CPU emulation: kiln-emulation-kernels builds the model's kernels, "
                         "DRIVER (libkiln_emulated_cuda.so) stands in for libcuda")
    args = ap.parse_args()
    spec = dict(zoo.zoo_spec_for(args.model) or {})
    if not args.shape and spec.get("dynamic_axes"):  # a zoo model exported with dynamic axes: the manifest's shapes
        args.shape = [f"{n}:{'x'.join(map(str, s['shape']))}" for n, s in spec["inputs"].items()]
    if args.emulate:
        tool, driver = args.emulate
        emu_dir = os.path.join(args.work or os.getcwd(), "emulation")
        tactics = "off"  # the kernels the artifact keeps generated depend on its library tactics
        for i, a in enumerate(args.compile_arg):
            if a.startswith("--library-tactics"):
                tactics = a.split("=", 1)[1] if "=" in a else args.compile_arg[i + 1]
        shape_args = [a for s in args.shape for a in ("--shape", s)]
        built = subprocess.run([tool, args.model, emu_dir, "f32", tactics] + shape_args, capture_output=True, text=True)
        if built.returncode != 0:
            print(f"kiln-emulation-kernels failed:\n{built.stderr}")
            sys.exit(1)
        os.environ["KILN_CUDA_DRIVER"] = driver
        os.environ["KILN_EMULATED_KERNELS"] = built.stdout.strip().splitlines()[-1]
    if args.target.startswith("cuda") and not has_cuda_device():
        print("skipped: no CUDA device on this machine")
        sys.exit(77)
    name = os.path.splitext(os.path.basename(args.model))[0]
    work = args.work or os.path.join(os.getcwd(), "compare_" + name)
    import onnx
    outputs = [o.name for o in onnx.load(args.model, load_external_data=False).graph.output]
    if args.detections:
        try:
            spec["detections"] = detection_rule(args.detections, args.min_matched, outputs)
        except ValueError as e:
            print(f"{name}: {e}")
            sys.exit(2)
    tolerance = args.tolerance if args.tolerance is not None else spec.get("tolerance", 1e-4)
    shapes = {s.split(":")[0]: [int(d) for d in s.split(":")[1].split("x")] for s in args.shape}
    specs = zoo.input_specs(args.model, shapes)
    for r in args.range:
        input_name, low, high = r.rsplit(":", 2)
        if input_name not in specs:
            print(f"{name}: --range names no input '{input_name}' (inputs: {', '.join(specs)})")
            sys.exit(2)
        specs[input_name] = dict(specs[input_name], low=float(low), high=float(high))
    paths = zoo.make_inputs(specs, work, args.seed)
    kiln_dir, ort_dir = os.path.join(work, "kiln"), os.path.join(work, "ort")
    target = args.model
    if args.compile:
        os.makedirs(work, exist_ok=True)
        target = os.path.join(work, name + ".kiln")
        shape_args = [a for s in args.shape for a in ("--shape", s)]
        built = subprocess.run([args.kiln, "compile", args.model, "--target", args.target, "-o", target, "--quiet"] + shape_args +
                               args.compile_arg,
                               capture_output=True, text=True)
        if built.returncode != 0:
            print(f"{name}: kiln compile failed:\n{built.stderr}")
            sys.exit(1)
        print(built.stdout.strip())
    kiln = subprocess.run([args.kiln, "run", target, "--output-dir", kiln_dir] + zoo.input_args(paths) +
                          args.kiln_arg, capture_output=True, text=True)
    if kiln.returncode != 0:
        print(f"{name}: kiln run failed:\n{kiln.stderr}")
        sys.exit(1)
    record = zoo.run_ort(args.model, paths, ort_dir)

    detections = spec.get("detections")
    det_names = [detections["boxes"], detections["scores"], detections["labels"]] if detections else []
    per_detection = detections.get("per_detection", []) if detections else []
    ok = True
    for out in outputs:
        a, b = zoo.load_output(kiln_dir, out), zoo.load_output(ort_dir, out)
        if out in per_detection:
            continue
        if a.dtype != b.dtype or (a.shape != b.shape and out not in det_names):
            print(f"{name}/{out}: {a.dtype}{list(a.shape)} vs ONNX Runtime {b.dtype}{list(b.shape)} FAILED")
            ok = False
        elif out not in det_names:
            err, scale, rel = relative_error(a, b)
            good = rel <= tolerance
            ok &= good
            print(f"{name}/{out}: {list(a.shape)} max abs diff {err:.3g}, scale {scale:.3g}, "
                  f"relative {rel:.3g} (tolerance {tolerance:g}) {'ok' if good else 'FAILED'}")
    if detections:
        kiln_det = [zoo.load_output(kiln_dir, n) for n in det_names]
        ort_det = [zoo.load_output(ort_dir, n) for n in det_names]
        try:
            check_detection_outputs(det_names, ort_det)
        except ValueError as e:
            print(f"{name}: {e}")
            sys.exit(2)
        pairs, total = detection_pairs(kiln_det, ort_det, tolerance)
        share = len(pairs) / total if total else 1.0
        good = share >= detections["min_matched"] and total > 0
        ok &= good
        why = "" if total else " (no detections on either side: nothing was compared)"
        print(f"{name}/detections: kiln {len(kiln_det[2])}, ONNX Runtime {len(ort_det[2])}, matched {len(pairs)} "
              f"({100 * share:.1f}%, need {100 * detections['min_matched']:g}%) {'ok' if good else 'FAILED'}{why}")
        for out in per_detection:
            a, b = zoo.load_output(kiln_dir, out), zoo.load_output(ort_dir, out)
            if a.dtype != b.dtype or a.shape[1:] != b.shape[1:]:
                print(f"{name}/{out}: {a.dtype}{list(a.shape)} vs ONNX Runtime {b.dtype}{list(b.shape)} FAILED")
                ok = False
                continue
            err, scale, rel = per_detection_error(a, b, pairs)
            good = rel <= tolerance
            ok &= good
            print(f"{name}/{out}: {len(pairs)} matched detections' rows, max abs diff {err:.3g}, scale {scale:.3g}, "
                  f"relative {rel:.3g} (tolerance {tolerance:g}) {'ok' if good else 'FAILED'}")
    print(f"onnxruntime: {record['latency_ms']['mean']:.1f} ms")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
