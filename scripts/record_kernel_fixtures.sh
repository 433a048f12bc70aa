#!/usr/bin/env bash
# Record what kernel XFS does for a list of fsmark workloads: one fixture per workload with the
# per-mount statistics of the run, per-event trace counts, sample trace lines, and the kernel
# version and mkfs geometry. labfs's fidelity test compares itself against these, per file.
#
#   sudo scripts/record_kernel_fixtures.sh [OUTDIR]      (default OUTDIR: tests/fixtures/kernel)
#
# Needs: root, mkfs.xfs (xfsprogs), a free loop device, tracefs (mounted here if it is not).
# Settings (environment):
#   FSMARK   our binary (default: target/release/fsmark, built if missing)
#   IMGDIR   where the 4 GiB sparse image goes (default: /var/tmp)
#   ONLY     record only the workload with this name
#
# Each workload runs on a freshly made filesystem (mkfs.xfs defaults on a 4 GiB sparse file, as
# in the issue's measurements): mount, clear this mount's stats, start tracing, run
# `fsmark --fs host`, syncfs, then wait until the counters stop moving (the kernel inactivates
# and reclaims unlinked inodes in the background), and read the per-mount stats.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/tests/fixtures/kernel}
FSMARK=${FSMARK:-$root/target/release/fsmark}
IMGDIR=${IMGDIR:-/var/tmp}
ONLY=${ONLY:-}

die() { echo "record_kernel_fixtures: $*" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || die "needs root (loop devices, mount, tracefs)"
command -v mkfs.xfs >/dev/null || die "needs mkfs.xfs (apt-get install xfsprogs)"
[[ -x $FSMARK ]] || (cd "$root" && cargo build --release --bin fsmark >&2)

tr=/sys/kernel/tracing
if [[ ! -e $tr/set_event ]]; then
    mount -t tracefs nodev "$tr" || die "cannot mount tracefs on $tr"
fi

# The events labfs fires, under the kernel's names (group:event).
events=(
    xfs:xfs_log_force
    xfs:xlog_iclog_activate xfs:xlog_iclog_clean xfs:xlog_iclog_callback
    xfs:xlog_iclog_callbacks_start xfs:xlog_iclog_callbacks_done xfs:xlog_iclog_force
    xfs:xlog_iclog_force_lsn xfs:xlog_iclog_release xfs:xlog_iclog_switch xfs:xlog_iclog_sync
    xfs:xlog_iclog_syncing xfs:xlog_iclog_sync_done xfs:xlog_iclog_want_sync
    xfs:xlog_iclog_wait_on xfs:xlog_iclog_write
    xfs:xfs_ail_push xfs:xfs_ail_pinned xfs:xfs_ail_locked xfs:xfs_ail_flushing
    xfs:xfs_ail_insert xfs:xfs_ail_move xfs:xfs_ail_delete
    writeback:sb_mark_inode_writeback writeback:sb_clear_inode_writeback
)

# name | fsmark arguments (after -d)
workloads=(
    "s0-n20000|-S0 -s 0 -n 20000"
    "s1-4k-n2000-t1|-S1 -s 4096 -n 2000"
    "s1-4k-n2000-t2|-S1 -s 4096 -n 2000 -t 2"
    "s4-4k-n2000-D16|-S4 -s 4096 -n 2000 -D 16"
    "s1-64k-n1000|-S1 -s 65536 -n 1000"
    "s2-4k-n2000|-S2 -s 4096 -n 2000"
    "s3-4k-n2000|-S3 -s 4096 -n 2000"
)

img=$(mktemp "$IMGDIR/xfs-fixture.XXXXXX.img")
mnt=$(mktemp -d /tmp/xfs-fixture-mnt.XXXXXX)
loop=""
cleanup() {
    echo 0 >"$tr/tracing_on" 2>/dev/null || true
    : >"$tr/set_event" 2>/dev/null || true
    mountpoint -q "$mnt" && umount "$mnt"
    [[ -n $loop ]] && losetup -d "$loop" 2>/dev/null
    rm -f "$img"
    rmdir "$mnt" 2>/dev/null || true
}
trap cleanup EXIT

# Read the counters until two readings 200 ms apart agree (or 20 s pass). The push_ail line is
# left out of the comparison: xfsaild counts a push pass every 50 ms while the AIL holds items
# it has no reason to write yet, so that line never stops moving on an idle mount.
settle() {
    local file=$1 prev="" cur waited=0
    while :; do
        cur=$(grep -v '^push_ail ' "$file")
        [[ $cur == "$prev" ]] && { echo "settled after ${waited} ms"; return; }
        ((waited >= 20000)) && { echo "did not settle in 20000 ms"; return; }
        prev=$cur
        sleep 0.2
        waited=$((waited + 200))
    done
}

mkdir -p "$out"
for w in "${workloads[@]}"; do
    name=${w%%|*}
    args=${w#*|}
    [[ -n $ONLY && $ONLY != "$name" ]] && continue
    echo "== $name: fsmark $args" >&2
    truncate -s 0 "$img"
    truncate -s 4G "$img"
    loop=$(losetup -f --show "$img")
    mkfs.xfs -q -f "$loop"
    mount "$loop" "$mnt"
    dev=$(basename "$loop")
    stats=/sys/fs/xfs/$dev/stats
    [[ -e $stats/stats ]] || die "no per-mount stats at $stats"
    mkdir "$mnt/t"

    dir=$out/$name
    mkdir -p "$dir"
    echo 0 >"$tr/tracing_on"
    : >"$tr/set_event"
    echo 65536 >"$tr/buffer_size_kb"
    for e in "${events[@]}"; do
        echo "$e" >>"$tr/set_event" 2>/dev/null || echo "note: kernel has no event $e" >&2
    done
    : >"$tr/trace"
    sync
    echo 1 >"$stats/stats_clear"
    echo 1 >"$tr/tracing_on"
    # shellcheck disable=SC2086
    "$FSMARK" --fs host -d "$mnt/t" $args -l /dev/null >"$dir/fsmark.txt"
    sync -f "$mnt"
    settle_note=$(settle "$stats/stats")
    echo 0 >"$tr/tracing_on"
    cat "$stats/stats" >"$dir/stats.txt"

    # Per-event counts from the trace text; refuse a fixture whose buffer overflowed.
    cp "$tr/trace" "$dir/.trace.full"
    header=$(grep -m1 'entries-in-buffer' "$dir/.trace.full" || true)
    inbuf=$(sed -E 's#.*entries-in-buffer/entries-written: ([0-9]+)/([0-9]+).*#\1#' <<<"$header")
    written=$(sed -E 's#.*entries-in-buffer/entries-written: ([0-9]+)/([0-9]+).*#\2#' <<<"$header")
    [[ $inbuf == "$written" ]] || die "$name: trace buffer overflowed ($header); raise buffer_size_kb"
    for e in "${events[@]}"; do
        ev=${e#*:}
        printf '%s %s\n' "$ev" "$(grep -c " $ev: " "$dir/.trace.full" || true)"
    done >"$dir/trace_counts.txt"
    # Up to 5 sample lines per event, for the trace-layout tests.
    for e in "${events[@]}"; do
        grep -m5 " ${e#*:}: " "$dir/.trace.full" || true
    done >"$dir/trace_sample.txt"
    rm -f "$dir/.trace.full"

    files=$(awk '/^ *[0-9]+ +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9]+ *$/ {n += $2} END {print n}' "$dir/fsmark.txt")
    {
        echo "workload: $name"
        echo "command: fsmark --fs host -d MNT/t $args"
        echo "files: $files"
        echo "kernel: $(uname -r)"
        echo "stats: per-mount /sys/fs/xfs/<dev>/stats/stats, cleared before the run; $settle_note"
        echo "mkfs: mkfs.xfs -f on a 4 GiB sparse file ($(mkfs.xfs -V))"
        xfs_info "$mnt" | sed 's/^/geometry: /'
    } >"$dir/meta.txt"

    umount "$mnt"
    losetup -d "$loop"
    loop=""
    echo "   $files files; $(grep -m1 '^log ' "$dir/stats.txt")" >&2
done
