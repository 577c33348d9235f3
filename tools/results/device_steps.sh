# Sourced by a device script from the repository root (tools/results/*.sh, session 16 on;
# the scripts before it carry their own copies, as they ran).  Needs L (the log), T0
# (the script's start, $SECONDS) and C (bench case names); REPEATS and BENCH_TIMEOUT
# override the defaults.
say() { echo "[t=$((SECONDS-T0))s] $*" >> "$L"; }
# C timed in the current directory's tree (a patched copy: cd there first), short rows
bench() {
  timeout "${BENCH_TIMEOUT:-80}" python3 tools/bench.py $C --repeats "${REPEATS:-20}" --check-seqs 2 2>&1 \
    | grep -v "^#" | cut -c1-100 >> "$L"
}
