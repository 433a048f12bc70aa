#!/usr/bin/env bash
# fiolike against fio 3.33 on tmpfs, interleaved, reported as ratios (issue 11's benchmark).
#
# Two jobs, each run ROUNDS times by fio and by fiolike --fs host, alternating, in a fresh
# directory on tmpfs (/dev/shm by default) so the filesystem costs the same for both and the
# tools' own overhead decides:
#   seqwrite:  rw=write     bs=4k size=256m ioengine=psync
#   randfsync: rw=randwrite bs=4k size=256m ioengine=psync fsync=4
# Prints each run's bandwidth (fio's JSON write.bw_bytes) and the ratio of the medians,
# fiolike / fio (>= 1.0 means fiolike's overhead is no larger than fio's).
#
# Usage: scripts/bench_fiolike_vs_fio.sh [ROUNDS]   (env: TMPFS=/dev/shm, SIZE=256m)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
tmpfs=${TMPFS:-/dev/shm}
size=${SIZE:-256m}
command -v fio >/dev/null || { echo "bench: fio is not installed (apt-get install fio)" >&2; exit 2; }
cargo build --release --quiet --bin fiolike
fiolike=target/release/fiolike
work=$(mktemp -d "$tmpfs/fiolike-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

bw() { # tool, job name, job options...: prints write bandwidth in bytes/s
  local tool=$1 name=$2; shift 2
  local dir="$work/$tool-$name"
  rm -rf "$dir"; mkdir -p "$dir"
  local out
  if [ "$tool" = fio ]; then
    out=$(fio --output-format=json --name="$name" --directory="$dir" "$@")
  else
    out=$("$fiolike" --fs host --output-format=json --name="$name" --directory="$dir" "$@")
  fi
  rm -rf "$dir"
  python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["write"]["bw_bytes"])' <<<"$out"
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

run_job() { # label, options...
  local label=$1; shift
  local f=() l=()
  for ((r = 1; r <= rounds; r++)); do
    f+=("$(bw fio "$label" "$@")")
    l+=("$(bw fiolike "$label" "$@")")
    printf '%-10s round %d: fio %6.0f MiB/s  fiolike %6.0f MiB/s\n' "$label" "$r" \
      "$(echo "${f[-1]} / 1048576" | bc -l)" "$(echo "${l[-1]} / 1048576" | bc -l)"
  done
  local mf ml
  mf=$(printf '%s\n' "${f[@]}" | median)
  ml=$(printf '%s\n' "${l[@]}" | median)
  printf '%-10s median: fio %.0f MiB/s, fiolike %.0f MiB/s, ratio fiolike/fio = %.2f\n' "$label" \
    "$(echo "$mf / 1048576" | bc -l)" "$(echo "$ml / 1048576" | bc -l)" "$(echo "$ml / $mf" | bc -l)"
}

echo "fio: $(fio --version), fiolike: $($fiolike --version), on $tmpfs ($(stat -f -c %T "$tmpfs"))"
run_job seqwrite --rw=write --bs=4k --size="$size" --ioengine=psync
run_job randfsync --rw=randwrite --bs=4k --size="$size" --ioengine=psync --fsync=4
