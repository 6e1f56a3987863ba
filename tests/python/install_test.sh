#!/usr/bin/env bash
# Installs the Python package as a user would, offline, into a fresh virtual
# environment, then runs the API suite with that environment's python from
# outside the source tree, checking that `import kiln` finds the installed copy.
#   install_test.sh SOURCE_DIR BUILD_DIR WORK_DIR
set -euo pipefail
src=$1 build=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
KILN_BUILD_DIR=$build "$work/venv/bin/python" -m pip install --no-build-isolation --no-index --quiet "$src"
site=$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
test -f "$site/kiln/_kiln.pyi" && test -f "$site/kiln/py.typed" || { echo "the type stubs were not installed"; exit 1; }
cd "$work"
KILN_EXPECT_PACKAGE_UNDER=$work/venv env -u PYTHONPATH "$work/venv/bin/python" "$src/tests/python/test_api.py"
