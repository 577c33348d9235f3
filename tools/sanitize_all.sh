#!/usr/bin/env bash
# compute-sanitizer memcheck, racecheck and initcheck over every variant family
# (tools/sanitize_all.py; --quick for the six-family subset). From the repo root:
#   bash tools/sanitize_all.sh [--quick] [--tools memcheck,initcheck] [--only SUBSTRING]
set -u -o pipefail
cd "$(dirname "$0")/.."
exec python3 tools/sanitize_all.py "$@"
