"""Compile an ONNX model with kiln, run it, and compare with ONNX Runtime.

    python3 examples/python/compile_and_run.py [MODEL.onnx]   (default: the tiny ResNet)

Each cell below is one step of the notebook a new user would write. ONNX
Runtime's numbers come from scripts/ort_reference.js (npm onnxruntime-node,
installed by scripts/setup.sh); `import kiln` needs the package installed
(docs/python.md) or PYTHONPATH=build/python.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import kiln

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
model_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "models", "tiny", "resnet_tiny-raw.onnx")

# %% Compile for this CPU (target="cuda" compiles for the GPU) and look at the model.
start = time.perf_counter()
model = kiln.compile(model_path, target="cpu")
print(f"compiled in {time.perf_counter() - start:.2f} s: {model}")

# %% Run on seeded inputs of the model's shapes and dtypes.
rng = np.random.default_rng(0)
inputs = {s.name: rng.uniform(-1, 1, s.shape).astype(s.dtype) for s in model.inputs}
outputs = model.run(inputs)
for name, value in outputs.items():
    print(f"{name}: {value.dtype}{list(value.shape)}, first values {value.ravel()[:4]}")

# %% Time it: the median of 50 runs after 5 warm-up runs.
for _ in range(5):
    model.run(inputs)
times = []
for _ in range(50):
    start = time.perf_counter()
    model.run(inputs)
    times.append((time.perf_counter() - start) * 1000)
kiln_ms = float(np.median(times))

# %% ONNX Runtime on the same inputs: its outputs and its latency (same run count).
with tempfile.TemporaryDirectory() as work:
    args = []
    for name, value in inputs.items():
        np.save(os.path.join(work, name + ".npy"), value)
        args += ["--input", f"{name}={os.path.join(work, name + '.npy')}"]
    ort = subprocess.run(["node", os.path.join(ROOT, "scripts", "ort_reference.js"), model_path, *args, "--output-dir", work,
                          "--warmup", "5", "--runs", "50"], capture_output=True, text=True, check=True)
    record = json.loads(ort.stdout.strip().splitlines()[-1])
    worst = 0.0
    for name, value in outputs.items():
        expected = np.load(os.path.join(work, name + ".npy"))
        worst = max(worst, float(np.abs(value - expected).max() / max(np.abs(expected).max(), 1e-30)))
ort_ms = record["latency_ms"]["p50"]
print(f"largest difference from ONNX Runtime, relative to its scale: {worst:.2e}")
print(f"p50 latency: kiln {kiln_ms:.3f} ms, ONNX Runtime {ort_ms:.3f} ms (kiln / ORT {kiln_ms / ort_ms:.2f}x)")
sys.exit(0 if worst < 1e-4 else 1)
