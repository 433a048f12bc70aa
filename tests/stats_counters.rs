//! The XFS-layout counters: rendered text, field placement, clear, threads, wrap.
//!
//! These tests use private `XfsStats` sets only; the process-wide `global()` set is tested in
//! `stats_mount.rs`, alone in its binary, so no test here can disturb it.

mod common;

use std::sync::Arc;

use fslab::fs::stats::{
    BTREE_FIELDS, BtreeLine, NUM_U32, NUM_U64, Stat, Stat64, StatFile, XfsStats,
};

/// The 6.14–6.19 `/proc/fs/xfs/stat` layout: line names and field counts (`fs/xfs/xfs_stats.c`).
const KERNEL_LAYOUT: [(&str, usize); 31] = [
    ("extent_alloc", 4),
    ("abt", 4),
    ("blk_map", 7),
    ("bmbt", 4),
    ("dir", 4),
    ("trans", 3),
    ("ig", 7),
    ("log", 5),
    ("push_ail", 10),
    ("xstrat", 2),
    ("rw", 2),
    ("attr", 4),
    ("icluster", 3),
    ("vnodes", 8),
    ("buf", 9),
    ("abtb2", 15),
    ("abtc2", 15),
    ("bmbt2", 15),
    ("ibt2", 15),
    ("fibt2", 15),
    ("rmapbt", 15),
    ("refcntbt", 15),
    ("rmapbt_mem", 15),
    ("rcbagbt", 15),
    ("rtrmapbt", 15),
    ("rtrmapbt_mem", 15),
    ("rtrefcntbt", 15),
    ("qm", 8),
    ("xpc", 3),
    ("defer_relog", 1),
    ("debug", 1),
];

/// Split rendered text into (name, values) per line, checking the `name %u %u...\n` shape.
fn split_lines(text: &str) -> Vec<(String, Vec<u64>)> {
    assert!(text.ends_with('\n'), "text must end with a newline");
    text.lines()
        .map(|line| {
            assert!(!line.contains("  ") && !line.ends_with(' '), "{line:?}");
            let mut words = line.split(' ');
            let name = words.next().unwrap_or_default().to_string();
            let values = words
                .map(|w| w.parse::<u64>().unwrap_or_else(|_| panic!("{line:?}")))
                .collect();
            (name, values)
        })
        .collect()
}

/// A set where every counter holds a distinct value: u32 counter i holds i + 1, btree
/// counters hold 1000 + their flat index, u64 counter j holds (j + 1) << 40.
fn distinct_values() -> XfsStats {
    let st = XfsStats::with_shards(3);
    for s in Stat::ALL {
        st.add(s, s.index() as u32 + 1);
    }
    for line in BtreeLine::ALL {
        let mut counts = [0u32; BTREE_FIELDS];
        for (i, c) in counts.iter_mut().enumerate() {
            *c = 1000 + (line.first_index() + i) as u32;
        }
        st.add_btree(line, &counts);
    }
    for s in Stat64::ALL {
        st.add64(s, (s.index() as u64 + 1) << 40);
    }
    st
}

#[test]
fn render_prints_the_31_kernel_lines_with_264_u32_and_4_u64_fields() {
    let text = XfsStats::new().snapshot().render();
    let lines = split_lines(&text);
    let got: Vec<(&str, usize)> = lines.iter().map(|(n, v)| (n.as_str(), v.len())).collect();
    assert_eq!(got, KERNEL_LAYOUT.to_vec());
    let u32_fields: usize = got[..28].iter().map(|(_, n)| n).sum();
    let u64_fields: usize = got[28..30].iter().map(|(_, n)| n).sum();
    assert_eq!((u32_fields, u64_fields), (NUM_U32, NUM_U64));
    assert_eq!(
        lines[30].1,
        vec![0],
        "debug is 0: fslab is not a debug kernel"
    );
}

#[test]
fn every_counter_lands_in_its_own_line_and_field() {
    let snap = distinct_values().snapshot();
    let file = StatFile::parse(&snap.render()).expect("our render parses");
    for s in Stat::ALL {
        let (line, field) = s.position();
        assert_eq!(
            file.get(line.name, field),
            Some(s.index() as u64 + 1),
            "{s:?}"
        );
        assert_eq!(snap.get(s), s.index() as u32 + 1);
    }
    for line in BtreeLine::ALL {
        let want: Vec<u64> = (0..BTREE_FIELDS)
            .map(|i| 1000 + (line.first_index() + i) as u64)
            .collect();
        assert_eq!(
            file.line(line.name()).map(|l| l.values.clone()),
            Some(want.clone())
        );
        let got: Vec<u64> = snap.btree(line).iter().map(|&v| u64::from(v)).collect();
        assert_eq!(got, want);
    }
    assert_eq!(file.field("xpc", "xstrat_bytes"), Some(1 << 40));
    assert_eq!(file.field("xpc", "write_bytes"), Some(2 << 40));
    assert_eq!(file.field("xpc", "read_bytes"), Some(3 << 40));
    assert_eq!(file.field("defer_relog", "defer_relog"), Some(4 << 40));
    assert_eq!(snap.get64(Stat64::ReadBytes), 3 << 40);
}

#[test]
fn clear_keeps_vnodes_active_and_zeroes_everything_else_including_xpc() {
    let st = distinct_values();
    let active = st.snapshot().get(Stat::VnActive);
    assert_ne!(active, 0);
    st.clear();
    let snap = st.snapshot();
    assert_eq!(snap.get(Stat::VnActive), active);
    for (i, &v) in snap.counters32().iter().enumerate() {
        if i != Stat::VnActive.index() {
            assert_eq!(v, 0, "u32 counter {i} survived clear");
        }
    }
    assert_eq!(snap.counters64(), &[0; NUM_U64]);
    // Counting resumes from zero.
    st.inc(Stat::LogForce);
    assert_eq!(st.snapshot().get(Stat::LogForce), 1);
}

#[test]
fn many_threads_incrementing_sum_exactly() {
    const THREADS: u32 = 8;
    const PER_THREAD: u32 = 20_000;
    let st = Arc::new(XfsStats::new());
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let st = Arc::clone(&st);
            std::thread::spawn(move || {
                for _ in 0..PER_THREAD {
                    st.inc(Stat::DirCreate);
                    st.add64(Stat64::WriteBytes, 4096);
                    // Half the threads create in-core inodes, the other half free them.
                    if t % 2 == 0 {
                        st.inc(Stat::VnActive);
                    } else {
                        st.dec(Stat::VnActive);
                    }
                }
                st.add_btree(BtreeLine::Ibt2, &[1; BTREE_FIELDS]);
            })
        })
        .collect();
    for h in handles {
        h.join().expect("counter thread panicked");
    }
    let snap = st.snapshot();
    assert_eq!(snap.get(Stat::DirCreate), THREADS * PER_THREAD);
    assert_eq!(
        snap.get64(Stat64::WriteBytes),
        u64::from(THREADS * PER_THREAD) * 4096
    );
    assert_eq!(snap.get(Stat::VnActive), 0, "gauge sums across shards");
    assert_eq!(snap.btree(BtreeLine::Ibt2), [THREADS; BTREE_FIELDS]);
    assert!(st.shard_count() >= 2);
}

#[test]
fn u32_counters_wrap_like_the_kernels_percent_u() {
    let st = XfsStats::with_shards(4);
    st.add(Stat::LogBlocks, u32::MAX);
    st.add(Stat::LogBlocks, 3);
    assert_eq!(st.snapshot().get(Stat::LogBlocks), 2);

    // Wrapping across shards: two threads, each half of 2^32, sum to 0 mod 2^32.
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| st.add(Stat::BufGet, 1 << 31));
        }
    });
    assert_eq!(st.snapshot().get(Stat::BufGet), 0);

    // A gauge decremented below zero prints as a huge %u, as in the kernel.
    st.dec(Stat::QmDquot);
    let text = st.snapshot().render();
    assert!(
        text.contains(&format!("\nqm 0 0 0 0 0 0 {} 0\n", u32::MAX)),
        "{text}"
    );

    // The u64 counters do not wrap at 32 bits.
    st.add64(Stat64::XstratBytes, 5 << 32);
    assert_eq!(st.snapshot().get64(Stat64::XstratBytes), 5 << 32);
}

/// Tests on the host kernel's own statistics file: ignored unless asked for with
/// `--ignored kernel_xfs`, and then failing if the xfs module is not loaded (`tests/common`).
mod kernel_xfs {
    use super::*;
    use crate::common::xfs::stat_file;

    #[test]
    #[ignore = "kernel XFS: needs the xfs module's /proc/fs/xfs/stat; run with --ignored kernel_xfs"]
    fn render_matches_the_layout_of_this_hosts_proc_file() {
        let host = stat_file();
        let ours = split_lines(&XfsStats::new().snapshot().render());
        let theirs = split_lines(&host);
        // Every line both print has the same field count.
        for (name, values) in &theirs {
            if let Some((_, v)) = ours.iter().find(|(n, _)| n == name) {
                assert_eq!(v.len(), values.len(), "field count of {name}");
            }
        }
        // On a 6.14–6.19 kernel the whole line list is identical.
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        let mut ver = release.trim().split(['.', '-']);
        let major: u32 = ver.next().and_then(|v| v.parse().ok()).unwrap_or(0);
        let minor: u32 = ver.next().and_then(|v| v.parse().ok()).unwrap_or(0);
        if major == 6 && (14..=19).contains(&minor) {
            let names =
                |l: &[(String, Vec<u64>)]| l.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
            assert_eq!(names(&ours), names(&theirs), "kernel {}", release.trim());
        }
    }
}
