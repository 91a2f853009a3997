#!/usr/bin/env bash
# `make test` on a fresh clone of this repository's main, N times in a row, while HOGS
# CPU-bound processes run beside it (the machine loaded as a busy CI machine is).
#
#   bench/loaded_make_test.sh [RUNS=3] [HOGS=6]
#
# The clone goes next to this checkout (so ../shared is beside it, as in CI) and is removed
# at the end; the engines must run (SELFMODEL_REQUIRE_ENGINES=1, as in .ci/run). One line
# per run (exit status, wall seconds, pytest's summary line, the load average) goes to
# stdout and to bench/results/loaded_make_test.log; a failed run's whole log is kept in
# $TMPDIR (the clone is removed). Exit status: the number of failed runs.
set -uo pipefail
runs="${1:-3}"
hogs="${2:-6}"
here="$(cd "$(dirname "$0")/.." && pwd)"
clone="$(dirname "$here")/loaded-clone-$$"
log="$here/bench/results/loaded_make_test.log"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$clone"
}
trap cleanup EXIT

git clone --quiet --branch main "$here" "$clone" || exit 99
commit="$(git -C "$clone" rev-parse --short HEAD)"
(cd "$clone" && make install >/dev/null 2>&1) || { echo "loaded: make install failed in $clone" >&2; exit 99; }
for _ in $(seq "$hogs"); do
  python3 -c 'while True: pass' &
  pids+=("$!")
done
echo "$(date -u +%FT%TZ) commit $commit: $runs runs of make test beside $hogs CPU-bound processes on $(nproc) cores" | tee -a "$log"
failed=0
for i in $(seq "$runs"); do
  start=$(date +%s)
  (cd "$clone" && SELFMODEL_REQUIRE_ENGINES=1 make test >"$clone/.make-test-$i.log" 2>&1)
  rc=$?
  [ "$rc" -eq 0 ] || failed=$((failed + 1))
  summary="$(grep -E '^(=+ )?[0-9]+ (passed|failed)' "$clone/.make-test-$i.log" | tail -n 1)"
  echo "run $i: exit $rc, $(( $(date +%s) - start )) s wall, ${summary:-no pytest summary}, load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$log"
  if [ "$rc" -ne 0 ]; then
    grep -E '^(FAILED|ERROR) ' "$clone/.make-test-$i.log" | tee -a "$log"
    cp "$clone/.make-test-$i.log" "${TMPDIR:-/tmp}/loaded-make-test-$$-$i.log"
  fi
done
exit "$failed"
