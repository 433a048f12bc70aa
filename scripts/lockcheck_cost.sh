#!/usr/bin/env bash
# What the lock-order checker (src/fs/lockcheck.rs) costs: fsmark -S0 -s 0 on labfs in memory,
# built with the checker (`--features lockcheck`, as the tests run) and without it (the default
# release build), run alternately in one go; prints each run's files/sec and CPU seconds, the
# medians and the ratios with/without. CPU time is the steadier figure on a shared machine.
#
#   scripts/lockcheck_cost.sh            # 5 rounds of 200000 files, 1 thread
#   ROUNDS=9 FILES=100000 THREADS=4 scripts/lockcheck_cost.sh
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-5}
FILES=${FILES:-200000}
THREADS=${THREADS:-1}

cargo build --release --quiet --bin fsmark
cargo build --release --quiet --bin fsmark --features lockcheck --target-dir target/lockcheck
with=target/lockcheck/release/fsmark
without=target/release/fsmark
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT

run() {
  # Prints "files/sec cpu-seconds": the one table row of a single-loop run (FSUse% Count Size
  # Files/sec App-overhead) and the process's user+system time.
  local rate
  rate=$(/usr/bin/time -f '%U %S' -o "$tmp" "$1" -d /b -S0 -s 0 -t "$THREADS" -n "$((FILES / THREADS))" |
    awk '$1 ~ /^[0-9]+$/ && NF == 5 { print $4 }')
  echo "$rate $(awk '{ print $1 + $2 }' "$tmp")"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

wr=() ; wc=() ; or=() ; oc=()
for i in $(seq "$ROUNDS"); do
  read -r a ac <<<"$(run "$with")"
  read -r b bc <<<"$(run "$without")"
  echo "round $i: with checker $a files/s ${ac}s CPU; without $b files/s ${bc}s CPU"
  wr+=("$a"); wc+=("$ac"); or+=("$b"); oc+=("$bc")
done
m() { printf '%s\n' "$@" | median; }
mwr=$(m "${wr[@]}"); mwc=$(m "${wc[@]}"); mor=$(m "${or[@]}"); moc=$(m "${oc[@]}")
echo "median: with checker $mwr files/s ${mwc}s CPU; without $mor files/s ${moc}s CPU"
awk -v a="$mwr" -v b="$mor" -v c="$mwc" -v d="$moc" \
  'BEGIN { printf "ratio with/without: files/sec %.3f, CPU time %.3f\n", a / b, c / d }'
