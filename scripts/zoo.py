"""scripts/zoo.py - shared helpers for the Python drivers (model tests, bench/compare).

Reads the zoo manifest (models/zoo.json), makes seeded inputs for a model
(from its zoo spec, or from the ONNX file's declared inputs), runs ONNX
Runtime through scripts/ort_reference.js and kiln (run, bench) through its CLI, and loads
the .npy outputs both write. Imported, not run.
"""
import json
import os
import shutil
import subprocess

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ZOO_JSON = os.path.join(ROOT, "models", "zoo.json")
ORT_DRIVER = os.path.join(ROOT, "scripts", "ort_reference.js")

ONNX_TO_NUMPY = {1: "float32", 11: "float64", 7: "int64", 6: "int32", 9: "bool", 2: "uint8", 3: "int8",
                 10: "float16", 4: "uint16", 5: "int16", 12: "uint32", 13: "uint64"}


def describe_machine():
    """'CPU model, N cores, OS release' for the headers of recorded results."""
    import platform
    cpu = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def bench_parser(doc, out_name):
    """The argument parser of a zoo benchmark script: its docstring as the
    description, --kiln (the build's), --zoo (exported full models) and --out
    (build/OUT_NAME); the script adds its own options."""
    import argparse
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", default=os.path.join(ROOT, "build/tools/kiln/kiln"))
    ap.add_argument("--zoo", default=os.path.join(ROOT, "build/models"))
    ap.add_argument("--out", default=os.path.join(ROOT, "build", out_name))
    return ap


def replace_section(path, begin, end, lines):
    """Rewrites a generated part of a doc: from the `begin` marker through the
    `end` marker, with `lines` (which repeat both markers)."""
    text = open(path).read()
    start, stop = text.index(begin), text.index(end) + len(end)
    with open(path, "w") as f:
        f.write(text[:start] + "\n".join(lines) + text[stop:])


def load_zoo():
    with open(ZOO_JSON) as f:
        return {m["name"]: m for m in json.load(f)["models"]}


def zoo_spec_for(model_path):
    """The zoo entry of a file named <zoo model>-<form>.onnx, else None. A
    file exported at another batch size, <zoo model>-b<N>-<form>.onnx
    (export_models.py --batch N), gets the entry with batch N inputs; one
    exported with dynamic axes, <zoo model>-dyn-<form>.onnx, the entry as it is."""
    base = os.path.basename(model_path)
    for suffix in ("-default.onnx", "-raw.onnx"):
        if not base.endswith(suffix):
            continue
        name, batch = base[: -len(suffix)], None
        name = name[: -len("-dyn")] if name.endswith("-dyn") else name
        head, _, tail = name.rpartition("-b")
        if head and tail.isdigit():
            name, batch = head, int(tail)
        spec = load_zoo().get(name)
        if spec and batch:
            spec = json.loads(json.dumps(spec))
            for s in spec["inputs"].values():
                s["shape"][0] = batch
        return spec
    return None


def input_specs(model_path, shapes=None):
    """{name: {shape, dtype, low, high}} for every graph input that is not an
    initializer: from the zoo manifest when the model is in the zoo, else from
    the file (dynamic dims from `shapes` {name: dims}, else 1)."""
    spec = zoo_spec_for(model_path)
    if spec:
        return spec["inputs"]
    import onnx
    model = onnx.load(model_path, load_external_data=False)
    initializers = {i.name for i in model.graph.initializer}
    out = {}
    for inp in model.graph.input:
        if inp.name in initializers:
            continue
        tt = inp.type.tensor_type
        dims = (shapes or {}).get(inp.name) or [d.dim_value if d.HasField("dim_value") else 1 for d in tt.shape.dim]
        dtype = ONNX_TO_NUMPY.get(tt.elem_type)
        if dtype is None:
            raise SystemExit(f"input '{inp.name}' has ONNX element type {tt.elem_type}, which the drivers cannot generate")
        floating = np.issubdtype(np.dtype(dtype), np.floating)
        out[inp.name] = {"shape": dims, "dtype": dtype, "low": -1 if floating else 0, "high": 1 if floating else 10}
    return out


def make_inputs(specs, work, seed=0):
    """Writes seeded inputs as WORK/<name>.npy; returns {name: path}."""
    os.makedirs(work, exist_ok=True)
    rng = np.random.RandomState(seed)
    paths = {}
    for name, s in specs.items():
        dtype = np.dtype(s["dtype"])
        if np.issubdtype(dtype, np.floating):
            data = rng.uniform(s["low"], s["high"], s["shape"]).astype(dtype)
        elif dtype == np.bool_:
            data = rng.randint(0, 2, s["shape"]).astype(dtype)
        else:
            data = rng.randint(int(s["low"]), int(s["high"]), s["shape"]).astype(dtype)
        paths[name] = os.path.join(work, sanitize(name) + ".npy")
        np.save(paths[name], data)
    return paths


def sanitize(name):
    """The file name kiln and the ORT driver use for a tensor name."""
    return "".join(c if c.isalnum() or c in "_.-" else "_" for c in name)


def parse_shapes(text):
    """{name: [dims]} from `kiln compile`'s form, name:1x3x64x64,name2:1x17."""
    shapes = {}
    for item in text.split(","):
        name, _, dims = item.rpartition(":")
        shapes[name] = [int(d) for d in dims.split("x")]
    return shapes


def input_args(paths):
    args = []
    for name, path in paths.items():
        args += ["--input", f"{name}={path}"]
    return args


def node_ort_available():
    ort_dir = os.environ.get("KILN_ORT_DIR", os.path.join(ROOT, ".deps", "ort"))
    return shutil.which("node") is not None and os.path.isdir(os.path.join(ort_dir, "node_modules", "onnxruntime-node"))


def run_ort_python(model, paths, output_dir):
    """ONNX Runtime's Python package (CPU, all graph optimisations), for
    machines without node (the GPU box): one run, outputs as .npy, a record
    with its latency."""
    import time
    import onnxruntime
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    feeds = {name: np.load(path) for name, path in paths.items()}
    start = time.perf_counter()
    outputs = session.run(None, feeds)
    ms = (time.perf_counter() - start) * 1000
    if output_dir:
        os.makedirs(output_dir, exist_ok=True)
        for meta, value in zip(session.get_outputs(), outputs):
            np.save(os.path.join(output_dir, sanitize(meta.name) + ".npy"), value)
    return {"runtime": "onnxruntime", "backend": "cpu (python)", "version": onnxruntime.__version__,
            "latency_ms": {"mean": ms, "p50": ms, "p90": ms, "p99": ms}}


def run_ort(model, paths, output_dir=None, extra=()):
    """Runs the ONNX Runtime driver (node), or ONNX Runtime's Python package
    where node or its package is missing; returns the JSON record."""
    if not node_ort_available():
        try:
            import onnxruntime  # noqa: F401
        except ImportError:
            raise SystemExit("ONNX Runtime is missing: neither node with onnxruntime-node (scripts/setup.sh) "
                             "nor the onnxruntime Python package is installed")
        return run_ort_python(model, paths, output_dir)
    cmd = ["node", ORT_DRIVER, model] + input_args(paths) + list(extra)
    if output_dir:
        cmd += ["--output-dir", output_dir]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"ONNX Runtime failed on {model}:\n{result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def run_kiln_bench(kiln, model, paths, backend, extra=(), env=None, stderr_file=None):
    """Runs `kiln bench MODEL --backend B --format json` on the input files;
    returns its kiln-bench/1 record (its stderr, e.g. a --profile table, saved
    to `stderr_file` when given)."""
    cmd = [kiln, "bench", model, "--backend", backend, "--format", "json", "--quiet"] + list(extra) + input_args(paths)
    result = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise RuntimeError(f"kiln bench failed on {model}:\n{result.stderr.strip()}")
    if stderr_file:
        with open(stderr_file, "w") as f:
            f.write(result.stderr)
    return json.loads(result.stdout.strip().splitlines()[-1])


def load_output(directory, name):
    return np.load(os.path.join(directory, sanitize(name) + ".npy"))
