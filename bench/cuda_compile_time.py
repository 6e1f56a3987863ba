#!/usr/bin/python3
"""bench/cuda_compile_time.py - how long `kiln compile --target cuda` takes,
with an empty NVRTC cache and again with it filled.

  bench/cuda_compile_time.py MODEL.onnx [MODEL.onnx ...] [--target cuda] [--kiln PATH]

For each model: one compile into a fresh cache directory (every cubin and PTX
compiled by NVRTC), then the same compile again (all from the cache). Prints
a Markdown table: kernels, NVRTC jobs, NVRTC ms and whole-command seconds,
cold and warm, and the artifact size. Needs no GPU.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time


def compile_once(kiln, model, target, cache, out):
    env = dict(os.environ, KILN_CACHE_DIR=cache)
    start = time.monotonic()
    run = subprocess.run([kiln, "compile", model, "--target", target, "-o", out, "--quiet"], env=env,
                         capture_output=True, text=True)
    seconds = time.monotonic() - start
    if run.returncode != 0:
        sys.exit(f"kiln compile {model} failed:\n{run.stderr}")
    text = run.stdout
    nvrtc_ms = float(re.search(r"nvrtc ([0-9.]+)\n", text).group(1))
    compiled, cached = map(int, re.search(r"nvrtc +(\d+) compiled, (\d+) from the cache", text).groups())
    kernels = int(re.search(r"(\d+) distinct kernels", text).group(1))
    return {"seconds": seconds, "nvrtc_ms": nvrtc_ms, "compiled": compiled, "cached": cached, "kernels": kernels}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="+")
    parser.add_argument("--target", default="cuda")
    parser.add_argument("--kiln", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build",
                                                       "tools", "kiln", "kiln"))
    args = parser.parse_args()
    print(f"target {args.target}, {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d')}\n")
    print("| model | kernels | NVRTC jobs | cold: NVRTC ms | cold: compile s | warm: NVRTC ms | warm: compile s "
          "| artifact MiB |")
    print("|---|---|---|---|---|---|---|---|")
    for model in args.models:
        with tempfile.TemporaryDirectory() as work:
            cache, out = os.path.join(work, "cache"), os.path.join(work, "model.kiln")
            cold = compile_once(args.kiln, model, args.target, cache, out)
            warm = compile_once(args.kiln, model, args.target, cache, out)
            if cold["cached"] != 0 or warm["compiled"] != 0:
                sys.exit(f"{model}: expected a cold then a fully cached compile, got {cold} then {warm}")
            mib = os.path.getsize(out) / 2**20
            print(f"| {os.path.basename(model)} | {cold['kernels']} | {cold['compiled']} | {cold['nvrtc_ms']:.0f} "
                  f"| {cold['seconds']:.2f} | {warm['nvrtc_ms']:.1f} | {warm['seconds']:.2f} | {mib:.1f} |", flush=True)


if __name__ == "__main__":
    main()
