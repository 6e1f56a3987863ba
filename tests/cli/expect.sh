# tests/cli/expect.sh - the assertions the shell tests share (sourced):
#   fail MESSAGE                      stop the test with FAIL: MESSAGE
#   expect_in TEXT FILE               FILE contains TEXT (else print FILE and fail)
#   expect_fail TEXT COMMAND...       COMMAND exits non-zero and says TEXT on stderr
#   same_outputs A B                  every output .npy in A has a twin in B that matches it closely
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_in() { grep -qF -- "$1" "$2" || { echo "--- $2:"; cat "$2"; fail "expected '$1' in $2"; }; }
expect_fail() {
  local want=$1; shift
  if "$@" > err.out 2> err.txt; then fail "expected failure: $*"; fi
  expect_in "$want" err.txt
}
same_outputs() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import glob, os, sys
import numpy as np
files = sorted(glob.glob(os.path.join(sys.argv[1], '*.npy')))
assert files, sys.argv[1]
for f in files:
    a, b = np.load(f), np.load(os.path.join(sys.argv[2], os.path.basename(f)))
    assert np.allclose(a, b, rtol=1e-3, atol=1e-4), (f, np.abs(a - b).max())
PY
}
