#!/usr/bin/env python3
"""bench/library_pairs.py - library steps against the generated kernels they replace.

Reads two `kiln bench --backend cuda --profile N --format json` tables (the
stderr of the same model and batch compiled with `--library-tactics off` and
with `auto` or `all`) and pairs each library step `l<N>__...` with the
generated kernel `k<N>__...` of the same kernel group: device time per run
of each, and which won. bench/gpu-run writes these pairs for its benchmark
models (gpu-run.md, library-pairs.jsonl); the choice `auto` makes is
checked against them. `tuned_markdown` tables a `kiln tune --target cuda
--json` report the same way: each kernel tuned, against the library call
kiln tune measured beside it (issue 8's library baseline).

  bench/library_pairs.py OFF_PROFILE LIBRARY_PROFILE [--top 12]
"""
import argparse
import re
import sys

# "   0.123   12.3%    45%         1  (library)           l12__name  [schedule]"
# "   0.123   12.3%    45%         1  64,1,1 x 256        k12__name  [schedule]"
ROW = re.compile(r"^\s*([\d.]+)\s+[\d.]+%\s+\d+%\s+(\d+)\s+(\(library\)|\d+,\d+,\d+ x \d+)\s+(\S+)(?:\s+\[(.*)\])?\s*$")


def parse_profile(text):
    """{kernel: {"ms", "launches", "launch", "schedule"}} from a --profile table."""
    kernels = {}
    for line in text.splitlines():
        m = ROW.match(line)
        if m:
            kernels[m.group(4)] = {"ms": float(m.group(1)), "launches": int(m.group(2)), "launch": m.group(3),
                                   "schedule": m.group(5) or ""}
    return kernels


def pair(generated, library):
    """One record per generated kernel whose groups all run as library steps, slowest generated first.

    Identical kernel groups (BERT's layers, ResNet's repeated blocks) share one
    generated kernel `k<N>__...`, named after the first of them and launched
    once per group; each group is a library step of its own, `l<M>__...`. So
    a kernel is set against the library steps of the same call as `l<N>`'s
    (the same shapes and epilogue), when there are as many as its launches."""
    steps_of_call = {}
    for name, lib in library.items():
        if lib["launch"] == "(library)":
            steps_of_call.setdefault(lib["schedule"], []).append(lib)
    pairs = []
    for name, gen in generated.items():
        lib = library.get("l" + name[1:])
        if not name.startswith("k") or lib is None or lib["launch"] != "(library)":
            continue
        same = steps_of_call[lib["schedule"]]
        if sum(s["launches"] for s in same) != gen["launches"]:
            continue  # the groups of this kernel did not all become steps of this call
        pairs.append({"group": name[1:], "generated_ms": gen["ms"], "library_ms": sum(s["ms"] for s in same),
                      "schedule": gen["schedule"], "call": lib["schedule"], "launches": gen["launches"]})
    pairs.sort(key=lambda p: -p["generated_ms"])
    return pairs


def markdown(title, pairs, top=12):
    """A heading line, a summary line and a table of the `top` slowest generated kernels' pairs."""
    if not pairs:
        return [f"**{title}**: no library step pairs with a generated kernel.", ""]
    gen = sum(p["generated_ms"] for p in pairs)
    lib = sum(p["library_ms"] for p in pairs)
    wins = sum(1 for p in pairs if p["library_ms"] < p["generated_ms"])  # kernels
    steps = sum(p["launches"] for p in pairs)
    lines = [f"**{title}**: {steps} library steps ({len(pairs)} kernels), {gen:.3f} ms generated -> {lib:.3f} ms library "
             f"({lib / gen if gen else 0:.2f}x); the library is faster on {wins} of them.", "",
             "| kernel | launches | generated ms | library ms | library / generated | generated schedule | library call |",
             "|---|---:|---:|---:|---:|---|---|"]
    for p in pairs[:top]:
        ratio = p["library_ms"] / p["generated_ms"] if p["generated_ms"] else float("inf")
        lines.append(f"| {p['group']} | {p['launches']} | {p['generated_ms']:.3f} | {p['library_ms']:.3f} | {ratio:.2f} "
                     f"| {p['schedule']} | {p['call']} |")
    if len(pairs) > top:
        lines.append(f"| ({len(pairs) - top} more) | | | | | | |")
    return lines + [""]


def tuned_markdown(title, report, top=12):
    """The kernels of a `kiln tune --json` report whose library call was measured, heaviest (uses x tuned time) first:
    default, tuned and library time per run, and which runs when the database is applied."""
    tasks = [t for t in report["tasks"] if t.get("library") and not t.get("skipped")]
    if not tasks:
        return [f"**{title}**: no kernel with a measured library call.", ""]
    weight = lambda t: t["uses"] * t["best_ms"]
    tasks.sort(key=lambda t: -weight(t))
    faster = [t for t in tasks if t.get("library_faster")]
    tuned = sum(t["uses"] * t["best_ms"] for t in tasks)
    chosen = sum(t["uses"] * (t["library_ms"] if t.get("library_faster") else t["best_ms"]) for t in tasks)
    lines = [f"**{title}**: {len(tasks)} kernels with a library call, {len(faster)} faster as the call; uses x time "
             f"{tuned:.3f} ms tuned -> {chosen:.3f} ms with the faster of each ({chosen / tuned if tuned else 0:.2f}x).", "",
             "| kernel | uses | default ms | tuned ms | library | library ms | tuned / library | runs as |",
             "|---|---:|---:|---:|---|---:|---:|---|"]
    for t in tasks[:top]:
        lib = t["library_ms"]
        ratio = f"{t['best_ms'] / lib:.2f}" if lib > 0 else "-"
        runs = t["library"] if t.get("library_faster") else "generated"
        lines.append(f"| {t['description']} | {t['uses']} | {t['default_ms']:.4f} | {t['best_ms']:.4f} | {t['library']} | "
                     + (f"{lib:.4f}" if lib > 0 else f"failed: {t.get('library_error', '')}") + f" | {ratio} | {runs} |")
    if len(tasks) > top:
        lines.append(f"| ({len(tasks) - top} more) | | | | | | | |")
    return lines + [""]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("generated", help="profile table of the model compiled with --library-tactics off")
    ap.add_argument("library", help="profile table of the same model with --library-tactics auto or all")
    ap.add_argument("--top", type=int, default=12)
    a = ap.parse_args()
    pairs = pair(parse_profile(open(a.generated).read()), parse_profile(open(a.library).read()))
    print("\n".join(markdown(f"{a.library} against {a.generated}", pairs, a.top)))
    return 0 if pairs else 1


if __name__ == "__main__":
    sys.exit(main())
