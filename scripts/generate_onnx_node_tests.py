#!/usr/bin/python3
"""Generates the ONNX backend node test suite (model + inputs + expected
outputs per case) from Debian's python3-onnx into OUT/node.

    /usr/bin/python3 scripts/generate_onnx_node_tests.py OUT

Skips the work when OUT already holds a suite from the same onnx version.
"""
import os
import sys

import numpy as np

# onnx 1.12's generators use aliases that numpy 1.24 removed.
for alias, value in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if not hasattr(np, alias):
        setattr(np, alias, value)

import onnx  # noqa: E402
from onnx.backend.test.cmd_tools import main as onnx_test_tools  # noqa: E402


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    stamp = os.path.join(out, "GENERATED_BY_ONNX_" + onnx.__version__)
    if os.path.exists(stamp):
        print(f"{out}: suite from onnx {onnx.__version__} already present")
        return
    os.makedirs(out, exist_ok=True)
    sys.argv = ["onnx-backend-test-tools", "generate-data", "-o", out]
    onnx_test_tools()
    cases = len(os.listdir(os.path.join(out, "node")))
    open(stamp, "w").close()
    print(f"{out}: generated {cases} node test cases with onnx {onnx.__version__}")


if __name__ == "__main__":
    main()
