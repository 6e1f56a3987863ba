#!/usr/bin/python3
"""arch against -O3 in compile time (issue 7's "arch compiles faster",
docs/pass-selection.md), on the cpu target (LLVM) or a CUDA one (NVRTC; needs
the CUDA toolkit, not a GPU). Per model, --pairs alternating pairs of
`kiln compile MODEL --target T` with -O3 and with --pipeline arch (for cuda
with --no-cache: NVRTC compiles every kernel, the time a first compile for a
GPU pays). Reads from each summary the phases after import (passes with
arch's selection, plan, lower, emit, llvm or nvrtc) and the count of distinct
kernels; writes JSON to --out and the table into docs/pass-selection.md
between the target's markers (cpu-compile or cuda-compile). The passes
column is what the research calls compile time ("the time required to
generate the optimized computation graph"); the after-import column adds
code generation.

    bench/arch_compile.py [--kiln build/tools/kiln/kiln] [--zoo build/models] [--out build/arch-compile-TARGET]
                          [--models resnet50-raw,...] [--pairs 5] [--target cpu|cuda:sm_90] [--skip-run]
"""
import datetime
import json
import os
import re
import sys

from arch_versus_o3 import arch_parser, compile_phases, median, stored_results, zoo


def backend_of(target):
    """The summary's code-generation phase, how it counts distinct kernels, the flags and the doc markers."""
    if target == "cpu":
        return "llvm", r"(\d+) distinct kernels", ["--target", "cpu"], "cpu-compile"
    return "nvrtc", r"nvrtc +(\d+) compiled", ["--target", target, "--no-cache"], "cuda-compile"


def markers(target):
    name = backend_of(target)[3]
    return "<!-- %s:begin (bench/arch_compile.py) -->" % name, "<!-- %s:end -->" % name


def measure(a, name):
    model = os.path.join(a.zoo, name + ".onnx")
    phase, kernels, flags, _ = backend_of(a.target)
    result = {"model": name, "date": datetime.date.today().isoformat(), "machine": zoo.describe_machine(),
              "target": a.target, "backend_phase": phase, "after_import_ms": {"O3": [], "arch": []},
              "passes_ms": {"O3": [], "arch": []}, "backend_ms": {"O3": [], "arch": []}, "kernels": {}}
    for pair in range(a.pairs):
        print(f"bench/arch_compile.py: {name} pair {pair + 1}/{a.pairs}", file=sys.stderr, flush=True)
        for pipeline in (["arch", "O3"] if pair % 2 else ["O3", "arch"]):
            phases, out = compile_phases(a.kiln, a.out, model, pipeline, flags)
            result["after_import_ms"][pipeline].append(sum(v for k, v in phases.items() if k != "import"))
            result["passes_ms"][pipeline].append(phases["passes"])
            result["backend_ms"][pipeline].append(phases[phase])
            result["kernels"][pipeline] = int(re.search(kernels, out).group(1))
    with open(os.path.join(a.out, name + ".json"), "w") as f:
        json.dump(result, f)
    return result


def ratio_cell(arch, o3):
    """The ratio of the medians, with the range of the pairs' ratios."""
    ratios = [x / o for x, o in zip(arch, o3)]
    return "%.2f (%.2f..%.2f)" % (median(arch) / median(o3), min(ratios), max(ratios))


def normalized(r):
    """A record as measure() writes it; those of the CUDA-only script before it kept nvrtc_ms and nvrtc_compiles."""
    if "nvrtc_ms" in r:
        r = dict(r, backend_ms=r["nvrtc_ms"], kernels=r["nvrtc_compiles"])
    return r


def render(results, target, doc):
    begin, end = markers(target)
    results = [normalized(r) for r in results if r["target"] == target]
    machines = sorted({r["machine"] for r in results})
    phase = backend_of(target)[0]
    flags = " ".join(backend_of(target)[2])
    lines = [begin, "",
             "Measured on %s with `bench/arch_compile.py --target %s`: `kiln compile MODEL %s` with -O3 and with "
             "`--pipeline arch`, %s alternating pairs. *passes*: the pass phase (for arch with its selection: "
             "classification, candidates and the two rounds on the model), the research's compile time; *after "
             "import*: passes plus plan, lower and code generation (%s); medians, then the ratio of the medians with "
             "the range of the pairs' ratios; *kernels*: distinct kernels." % (
                 "; ".join(machines), target, flags, "/".join(sorted({str(len(r["passes_ms"]["O3"])) for r in results})),
                 phase),
             "",
             "| date | model | O3 ms (passes / %s, kernels) | arch ms (passes / %s, kernels) | arch / O3 passes "
             "| arch / O3 after import |" % (phase, phase),
             "|---|---|---:|---:|---|---|"]
    for r in results:
        t, p, b, k = r["after_import_ms"], r["passes_ms"], r["backend_ms"], r["kernels"]
        side = lambda s: "%.0f (%.1f / %.0f, %d)" % (median(t[s]), median(p[s]), median(b[s]), k[s])  # noqa: E731
        lines.append("| %s | %s | %s | %s | %s | %s |" % (r["date"], r["model"], side("O3"), side("arch"),
                                                           ratio_cell(p["arch"], p["O3"]), ratio_cell(t["arch"], t["O3"])))
    lines += ["", end]
    zoo.replace_section(doc, begin, end, lines)


def main():
    ap = arch_parser(__doc__, "arch-compile")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--target", default="cpu", help="cpu, or cuda:ARCH (the GPU architecture NVRTC compiles for)")
    a = ap.parse_args()
    if a.out == os.path.join(zoo.ROOT, "build", "arch-compile"):
        a.out += "-" + a.target.replace(":", "-")
    os.makedirs(a.out, exist_ok=True)
    if not a.skip_run:
        for m in a.models.split(","):
            measure(a, m)
    render(stored_results(a.out, "after_import_ms"), a.target, a.doc)


if __name__ == "__main__":
    main()
