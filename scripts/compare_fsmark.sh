#!/usr/bin/env bash
# Compare fslab's fsmark with a real fs_mark on the same directory, interleaved.
#
#   FS_MARK=/path/to/fs_mark scripts/compare_fsmark.sh
#
# Settings (environment):
#   FS_MARK  the real fs_mark binary (required; this script never builds it)
#   FSMARK   our binary (default: target/release/fsmark, built if missing)
#   DIR      where the files go (default: /dev/shm)
#   RUNS     runs per tool per case (default: 3)
#
# fsmark runs with --fs host, so both tools work on the same kernel filesystem.
# Cases: "-S0 -s 0 -n 50000" (pure metadata) and "-S1 -s 4096 -n 5000" (fsync per file).
# Each run alternates which tool goes first, so drift on a shared machine hits both alike.
# Prints each run's Files/sec (the table's row), each tool's mean, and fsmark/fs_mark.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
FS_MARK=${FS_MARK:?set FS_MARK=/path/to/fs_mark (a real fs_mark binary)}
FSMARK=${FSMARK:-$root/target/release/fsmark}
DIR=${DIR:-/dev/shm}
RUNS=${RUNS:-3}

if [[ ! -x $FSMARK ]]; then
    (cd "$root" && cargo build --release --bin fsmark >&2)
fi

work=$(mktemp -d "$DIR/fsmark-compare.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Files/sec of the single table row a one-iteration run prints.
run_one() {
    local bin=$1; shift
    rm -rf "$work/d"
    "$bin" -d "$work/d" "$@" -l "$work/log.txt" |
        awk '$1 ~ /^[0-9]+$/ && NF >= 5 { print $4 }'
}

cases=("-S0 -s 0 -n 50000" "-S1 -s 4096 -n 5000")
for c in "${cases[@]}"; do
    read -r -a args <<<"$c"
    ours=()
    theirs=()
    for ((i = 0; i < RUNS; i++)); do
        if ((i % 2 == 0)); then
            theirs+=("$(run_one "$FS_MARK" "${args[@]}")")
            ours+=("$(run_one "$FSMARK" --fs host "${args[@]}")")
        else
            ours+=("$(run_one "$FSMARK" --fs host "${args[@]}")")
            theirs+=("$(run_one "$FS_MARK" "${args[@]}")")
        fi
    done
    echo "case: $c  (dir $DIR, $RUNS runs each)"
    echo "  fs_mark files/sec: ${theirs[*]}"
    echo "  fsmark  files/sec: ${ours[*]}"
    awk -v a="${theirs[*]}" -v b="${ours[*]}" 'BEGIN {
        n = split(a, x, " "); split(b, y, " ");
        for (i = 1; i <= n; i++) { sa += x[i]; sb += y[i] }
        printf "  mean fs_mark %.1f  fsmark %.1f  ratio fsmark/fs_mark %.3f\n", sa / n, sb / n, sb / sa
    }'
done
