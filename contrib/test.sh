#!/bin/sh
# The whole test suite: installs missing dependencies (apt-get, as root), builds if needed,
# runs every test, and ends with one line "N passed, N failed, N skipped".
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/contrib/install-deps.sh"
"$top/contrib/build.sh"
exec "$top/test/run-tests.sh" "$@"
