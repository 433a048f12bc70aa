//! Per-mount statistics feed the process-wide set, as `XFS_STATS_INC(mp, ...)` does in the
//! kernel. One test only: it owns `global()` in this test binary, so nothing runs beside it.

use fslab::fs::stats::{BTREE_FIELDS, BtreeLine, MountStats, Stat, Stat64, global};

#[test]
fn mount_stats_update_their_own_set_and_the_global_one() {
    let before = global().snapshot();
    let a = MountStats::new();
    let b = MountStats::new();

    a.inc(Stat::LogForce);
    a.add(Stat::LogBlocks, 64);
    a.add64(Stat64::WriteBytes, 1 << 33);
    a.add_btree(BtreeLine::Fibt2, &[2; BTREE_FIELDS]);
    b.inc(Stat::LogForce);
    b.inc(Stat::VnActive);
    b.dec(Stat::VnActive);
    b.inc(Stat::VnActive);

    let sa = a.mount().snapshot();
    let sb = b.mount().snapshot();
    assert_eq!(sa.get(Stat::LogForce), 1);
    assert_eq!(sa.get(Stat::LogBlocks), 64);
    assert_eq!(sa.get64(Stat64::WriteBytes), 1 << 33);
    assert_eq!(sa.btree(BtreeLine::Fibt2), [2; BTREE_FIELDS]);
    assert_eq!(sa.get(Stat::VnActive), 0, "b's inodes are not a's");
    assert_eq!(sb.get(Stat::LogForce), 1);
    assert_eq!(sb.get(Stat::LogBlocks), 0, "a's log blocks are not b's");
    assert_eq!(sb.get(Stat::VnActive), 1);

    let after = global().snapshot();
    let grew = |s: Stat| after.get(s).wrapping_sub(before.get(s));
    assert_eq!(grew(Stat::LogForce), 2, "global sees both mounts");
    assert_eq!(grew(Stat::LogBlocks), 64);
    assert_eq!(grew(Stat::VnActive), 1);
    assert_eq!(
        after.get64(Stat64::WriteBytes) - before.get64(Stat64::WriteBytes),
        1 << 33
    );
    let fibt: Vec<u32> = after
        .btree(BtreeLine::Fibt2)
        .iter()
        .zip(before.btree(BtreeLine::Fibt2))
        .map(|(a, b)| a.wrapping_sub(b))
        .collect();
    assert_eq!(fibt, vec![2; BTREE_FIELDS]);

    // Clearing one mount's set leaves the global set alone (the sysfs per-mount clear).
    a.mount().clear();
    assert_eq!(a.mount().snapshot().get(Stat::LogForce), 0);
    assert_eq!(
        global().snapshot().get(Stat::LogForce),
        after.get(Stat::LogForce)
    );

    // Clearing the global set keeps its in-core inode count.
    global().clear();
    let cleared = global().snapshot();
    assert_eq!(cleared.get(Stat::LogForce), 0);
    assert_eq!(cleared.get64(Stat64::WriteBytes), 0);
    assert_eq!(cleared.get(Stat::VnActive), after.get(Stat::VnActive));
    assert_eq!(
        b.mount().snapshot().get(Stat::LogForce),
        1,
        "mount sets survive"
    );
}
