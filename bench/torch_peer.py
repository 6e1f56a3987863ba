#!/usr/bin/env python3
"""bench/torch_peer.py - PyTorch as the GPU peer: a zoo model's torch module
(models/export_models.py builds the same module the ONNX file was exported
from) timed in eager mode and under torch.compile, written as kiln-bench/1
records (docs/benchmarking.md) so bench/gpu-run can set them beside `kiln
bench --backend cuda`.

  bench/torch_peer.py MODEL_NAME [--batch N] [--mode eager|compile] [--device cuda|cpu]
                      [--precision f32|f16|bf16] [--warmup 100] [--runs 1000] [--max-seconds S] [--json FILE]

A timed run does what a kiln run does: copies the inputs from host memory to
the device, runs the model, copies the outputs back, and waits
(torch.cuda.synchronize). Weights are random (seeded, as in the export);
inputs come from the zoo spec at the requested batch. --precision f16 / bf16
converts the module and its float inputs to that type (model.half(), the
peer of `kiln bench --precision f16`); --precision tf32 lets cuBLAS and cuDNN
use TF32 (allow_tf32), the peer of `kiln bench --precision tf32`; f32 turns
TF32 off in both. Statistics: outliers
beyond 3 sigma dropped, nearest-rank percentiles, as kiln bench does.
"""
import argparse
import datetime
import json
import math
import os
import platform
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "models"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))


def summarize(samples, sigmas=3.0):
    mean = sum(samples) / len(samples)
    sd = math.sqrt(sum((s - mean) ** 2 for s in samples) / len(samples))
    kept = [s for s in samples if sd == 0 or abs(s - mean) <= sigmas * sd] or samples
    kept.sort()
    mean = sum(kept) / len(kept)
    sd = math.sqrt(sum((s - mean) ** 2 for s in kept) / len(kept))

    def rank(p):
        return kept[max(0, math.ceil(p / 100 * len(kept)) - 1)]

    return {"mean": mean, "stddev": sd, "min": kept[0], "max": kept[-1], "p50": rank(50), "p90": rank(90),
            "p99": rank(99)}, len(samples) - len(kept)


def host_inputs(spec, batch, seed=0):
    import torch
    gen = torch.Generator().manual_seed(seed)
    out = []
    for s in spec["inputs"].values():
        shape = list(s["shape"])
        if batch:
            shape[0] = batch
        if s["dtype"] == "int64":
            out.append(torch.randint(int(s["low"]), int(s["high"]), shape, generator=gen))
        else:
            out.append(torch.rand(shape, generator=gen) * (s["high"] - s["low"]) + s["low"])
    return out


def to_host(value):
    if isinstance(value, (tuple, list)):
        return [to_host(v) for v in value]
    return value.cpu()


def measure(name, batch=0, mode="eager", device="cuda", warmup=100, runs=1000, max_seconds=0.0, precision="f32"):
    """A kiln-bench/1 record for the zoo model `name` under PyTorch."""
    import torch
    import export_models
    import zoo
    spec = zoo.load_zoo()[name]
    started = time.time()
    dtype = {"f32": torch.float32, "tf32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[precision]
    # TF32 tensor cores for f32 matmuls and convolutions only under --precision tf32 (PyTorch's matmul default is off).
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = precision == "tf32"
    model = export_models.build(name).eval().to(device=device, dtype=dtype)
    inputs = [x.to(dtype) if x.is_floating_point() else x for x in host_inputs(spec, batch)]
    compile_ms = None
    if mode == "compile":
        if not hasattr(torch, "compile"):
            raise RuntimeError(f"torch {torch.__version__} has no torch.compile")
        t = time.perf_counter()
        model = torch.compile(model)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def run():
        with torch.no_grad():
            out = model(*[x.to(device) for x in inputs])
            out = to_host(out)
        sync()
        return out

    run()  # the first call compiles under torch.compile
    if mode == "compile":
        compile_ms = (time.perf_counter() - t) * 1000
    for _ in range(warmup):
        run()
    samples = []
    deadline = time.perf_counter() + max_seconds if max_seconds else None
    for _ in range(runs):
        t0 = time.perf_counter()
        run()
        samples.append((time.perf_counter() - t0) * 1000)
        if deadline and t0 >= deadline:
            break
    latency, outliers = summarize(samples)
    gpu = torch.cuda.get_device_name() if device == "cuda" else None
    b = batch or spec["inputs"][next(iter(spec["inputs"]))]["shape"][0]
    return {
        "schema": "kiln-bench/1", "runtime": "pytorch", "runtime_version": torch.__version__,
        "backend": f"torch-{mode}", "model": name, "model_path": None,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": {"host": platform.node(), "cpu": platform.processor() or platform.machine(),
                    "cores": os.cpu_count(), "os": platform.platform(), "gpu": gpu},
        "config": {"warmup": warmup, "runs": runs, "threads": torch.get_num_threads(), "batch": b, "sigmas": 3,
                   "seed": 0, "options": mode + ("" if precision == "f32" else f" {precision}"), "inputs": {k: [b] + v["shape"][1:] for k, v in spec["inputs"].items()}},
        "launch": None, "runs_completed": len(samples), "samples": len(samples) - outliers, "outliers": outliers, "latency_ms": latency,
        "throughput_per_s": b * 1000.0 / latency["mean"],
        "compile_ms": {"import": None, "passes": None, "codegen": compile_ms, "total": compile_ms or 0.0},
        "memory": {"peak_host_bytes": None,
                   "peak_device_bytes": torch.cuda.max_memory_allocated() if device == "cuda" else None},
        "gpu": None, "versus": None, "wall_s": time.time() - started,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="a zoo model name (models/zoo.json)")
    ap.add_argument("--batch", type=int, default=0, help="batch size (default: the zoo spec's)")
    ap.add_argument("--mode", choices=["eager", "compile"], default="eager")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--precision", choices=["f32", "tf32", "f16", "bf16"], default="f32")
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--max-seconds", type=float, default=0, help="stop the timed runs after this long (0: all)")
    ap.add_argument("--json", help="append the record to this file")
    args = ap.parse_args()
    record = measure(args.model, args.batch, args.mode, args.device, args.warmup, args.runs, args.max_seconds,
                     args.precision)
    line = json.dumps(record)
    print(line)
    if args.json:
        with open(args.json, "a") as f:
            f.write(line + "\n")


if __name__ == "__main__":
    main()
