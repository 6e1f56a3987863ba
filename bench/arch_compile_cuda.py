#!/usr/bin/python3
"""arch against -O3 in compile time on the CUDA target (issue 7's "arch
compiles faster", docs/pass-selection.md). Per model, --pairs alternating
pairs of `kiln compile MODEL --target cuda:ARCH --no-cache` with -O3 and with
--pipeline arch: NVRTC compiles every kernel (no cache), the time a first
compile for a GPU pays. Needs the CUDA toolkit's NVRTC, not a GPU. Reads the
phases after import (passes with arch's selection, plan, lower, emit, nvrtc)
and the count of NVRTC compiles from the summary; writes JSON to --out and the
table into docs/pass-selection.md between the cuda-compile markers.

    bench/arch_compile_cuda.py [--kiln build/tools/kiln/kiln] [--zoo build/models] [--out build/arch-compile-cuda]
                               [--models resnet50-raw,...] [--pairs 5] [--arch sm_90] [--skip-run]
"""
import datetime
import json
import os
import re
import sys

from arch_versus_o3 import arch_parser, compile_phases, median, stored_results, zoo

BEGIN, END = "<!-- cuda-compile:begin (bench/arch_compile_cuda.py) -->", "<!-- cuda-compile:end -->"


def measure(a, name):
    model = os.path.join(a.zoo, name + ".onnx")
    result = {"model": name, "date": datetime.date.today().isoformat(), "machine": zoo.describe_machine(),
              "target": "cuda:" + a.arch, "after_import_ms": {"O3": [], "arch": []}, "passes_ms": {"O3": [], "arch": []},
              "nvrtc_ms": {"O3": [], "arch": []}, "nvrtc_compiles": {}}
    for pair in range(a.pairs):
        print(f"bench/arch_compile_cuda.py: {name} pair {pair + 1}/{a.pairs}", file=sys.stderr, flush=True)
        for pipeline in (["arch", "O3"] if pair % 2 else ["O3", "arch"]):
            phases, out = compile_phases(a.kiln, a.out, model, pipeline, ["--target", "cuda:" + a.arch, "--no-cache"])
            result["after_import_ms"][pipeline].append(sum(v for k, v in phases.items() if k != "import"))
            result["passes_ms"][pipeline].append(phases["passes"])
            result["nvrtc_ms"][pipeline].append(phases["nvrtc"])
            result["nvrtc_compiles"][pipeline] = int(re.search(r"nvrtc +(\d+) compiled", out).group(1))
    with open(os.path.join(a.out, name + ".json"), "w") as f:
        json.dump(result, f)
    return result


def render(results, doc):
    machines = sorted({r["machine"] for r in results})
    lines = [BEGIN, "",
             "Measured on %s with `bench/arch_compile_cuda.py`: `kiln compile MODEL --target %s --no-cache` after "
             "import (passes, for arch with its selection, plus plan, lower, CUDA C emission and NVRTC), median over "
             "%s alternating pairs; *kernels*: NVRTC compiles (distinct kernels); the ratio of the medians with the "
             "range of the pairs' ratios." % ("; ".join(machines), results[0]["target"],
                                              "/".join(sorted({str(len(r["after_import_ms"]["O3"])) for r in results}))),
             "",
             "| date | model | O3 ms (passes / nvrtc, kernels) | arch ms (passes / nvrtc, kernels) | arch / O3 compile |",
             "|---|---|---:|---:|---|"]
    for r in results:
        t, p, n, k = r["after_import_ms"], r["passes_ms"], r["nvrtc_ms"], r["nvrtc_compiles"]
        ratios = [x / o for x, o in zip(t["arch"], t["O3"])]
        side = lambda s: "%.0f (%.0f / %.0f, %d)" % (median(t[s]), median(p[s]), median(n[s]), k[s])  # noqa: E731
        lines.append("| %s | %s | %s | %s | %.2f (%.2f..%.2f) |" % (
            r["date"], r["model"], side("O3"), side("arch"), median(t["arch"]) / median(t["O3"]), min(ratios), max(ratios)))
    lines += ["", END]
    zoo.replace_section(doc, BEGIN, END, lines)


def main():
    ap = arch_parser(__doc__, "arch-compile-cuda")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--arch", default="sm_90", help="the GPU architecture NVRTC compiles for")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if not a.skip_run:
        for m in a.models.split(","):
            measure(a, m)
    render(stored_results(a.out, "after_import_ms"), a.doc)


if __name__ == "__main__":
    main()
