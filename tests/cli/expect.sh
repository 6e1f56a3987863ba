# tests/cli/expect.sh - the assertions the shell tests share (sourced):
#   fail MESSAGE                      stop the test with FAIL: MESSAGE
#   expect_in TEXT FILE               FILE contains TEXT (else print FILE and fail)
#   expect_fail TEXT COMMAND...       COMMAND exits non-zero and says TEXT on stderr
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_in() { grep -qF -- "$1" "$2" || { echo "--- $2:"; cat "$2"; fail "expected '$1' in $2"; }; }
expect_fail() {
  local want=$1; shift
  if "$@" > err.out 2> err.txt; then fail "expected failure: $*"; fi
  expect_in "$want" err.txt
}
