#!/usr/bin/python3
"""bench/cpu_peak.py - the f32 multiply-add peak of this machine's cores, the
roof a CPU kernel's GFLOP/s is measured against.

  bench/cpu_peak.py [--threads 1,2] [--iters 100000000] [--cc cc]

Compiles (with -O3 -march=native -fopenmp) a loop of 12 independent chains
of 16-lane vector multiply-adds held in registers (enough chains to cover
the FMA latency on two pipes), runs it on each thread count (OpenMP, one
chain set per thread), and prints the best of five runs in GFLOP/s (two
FLOP per lane per multiply-add). What it measures is the arithmetic roof
alone: no loads or stores, so a real kernel (which also loads weights and
broadcasts inputs) reaches a fraction of it. Needs a C compiler with
OpenMP; no kiln build.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

SOURCE = r"""
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
typedef float v16 __attribute__((vector_size(64)));
#define CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
int main(int argc, char** argv) {
  long iters = atol(argv[1]);
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    double t0 = omp_get_wtime();
    float sink = 0;
#pragma omp parallel reduction(+ : sink)
    {
      v16 b, c;
      for (int i = 0; i < 16; ++i) b[i] = 1.0f - 1e-7f * i, c[i] = 1e-8f;
#define DECL(k) v16 a##k = b * (float)(k + 1);
      CHAINS(DECL)
      for (long i = 0; i < iters / 16; ++i) {
#define STEP(k) a##k = a##k * b + c;
        CHAINS(STEP)
#define KEEP(k) __asm__ volatile("" : "+v"(a##k));
        CHAINS(KEEP)
      }
#define SUM(k) for (int l = 0; l < 16; ++l) sink += a##k[l];
      CHAINS(SUM)
    }
    double t = omp_get_wtime() - t0;
    double gflops = 2.0 * 16 * 12 * (double)(iters / 16) * omp_get_max_threads() / t / 1e9;
    if (gflops > best) best = gflops;
    if (sink == 12345) printf("-");
  }
  printf("%.1f\n", best);
  return 0;
}
"""


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"model name\s*:\s*(.*)", f.read())
            return m.group(1).strip() if m else "unknown CPU"
    except OSError:
        return "unknown CPU"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", default="1,%d" % os.cpu_count(), help="comma-separated thread counts")
    ap.add_argument("--iters", type=int, default=100000000, help="multiply-adds per chain lane and thread")
    ap.add_argument("--cc", default="cc")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = os.path.join(tmp, "peak.c"), os.path.join(tmp, "peak")
        with open(src, "w") as f:
            f.write(SOURCE)
        built = subprocess.run([a.cc, "-O3", "-march=native", "-fopenmp", src, "-o", exe], capture_output=True, text=True)
        if built.returncode != 0:
            sys.exit("bench/cpu_peak.py: %s could not build the loop:\n%s" % (a.cc, built.stderr))
        dis = subprocess.run(["objdump", "-d", exe], capture_output=True, text=True).stdout
        width = "zmm (512-bit)" if re.search(r"vfmadd\w+\s+%zmm\d+,%zmm", dis) else \
                "ymm (256-bit)" if re.search(r"vfmadd\w+\s+%ymm\d+,%ymm", dis) else "unknown width"
        print("%s, %d logical cores; register-only multiply-adds on %s" % (cpu_name(), os.cpu_count(), width))
        for t in [int(x) for x in a.threads.split(",") if x]:
            run = subprocess.run([exe, str(a.iters)], env=dict(os.environ, OMP_NUM_THREADS=str(t), OMP_PROC_BIND="true"),
                                 capture_output=True, text=True, check=True)
            print("%d thread%s: %s GFLOP/s f32" % (t, "" if t == 1 else "s", run.stdout.strip()))


if __name__ == "__main__":
    main()
