//! csumhist's measurements on labfs: the structure of thread 004's histogram, and what the
//! single-pass update changes (same bytes, no head/tail calls, fewer calls).

use fslab::backend::open::LabConfig;
use fslab::fs::cksum::CksumMode;
use fslab::trace::testing;
use fslab::workload::csum::calls::{CallFilter, SizeDesc, SmallBelow};
use fslab::workload::csum::oltp::OltpConfig;
use fslab::workload::csum::run::LiveProgress;
use fslab::workload::csum::{Measured, Profile, Workload, measure};

fn run(mode: CksumMode, workload: &Workload) -> Measured {
    let _serial = testing::serial();
    let lab = LabConfig::new(Default::default());
    measure(&lab, mode, workload, None, &LiveProgress::default()).expect("measure")
}

fn fsmark_s1() -> Workload {
    Profile::FsmarkS1.workload(Some(150)).expect("profile")
}

#[test]
fn fsmark_s1_split_shows_the_seeds_structure() {
    let m = run(CksumMode::Split, &fsmark_s1());
    assert!(!m.workload.interrupted);
    let sites = m.calls.sites(CallFilter::Updates);
    let site = |name: &str| {
        sites
            .iter()
            .find(|s| s.site == name)
            .unwrap_or_else(|| panic!("no {name} in {sites:?}"))
    };
    // Inodes: 512 bytes, 100-byte heads, 408-byte tails, three crc32c calls each.
    let inode = site("inode");
    assert!(inode.calls >= 150, "{inode:?}");
    assert_eq!(inode.len, SizeDesc::Exact(512));
    assert_eq!(inode.heads, vec![100]);
    assert_eq!(inode.tail, SizeDesc::Exact(408));
    assert_eq!(inode.crc_calls, 3 * inode.calls);
    // Directory data blocks: 4096 bytes with 4-byte heads.
    let dir = site("dir3_data");
    assert_eq!(dir.len, SizeDesc::Exact(4096));
    assert_eq!(dir.heads, vec![4]);
    assert_eq!(dir.tail, SizeDesc::Exact(4088));
    // Once the journal is in, its record headers are 328 bytes with 32-byte heads.
    if let Some(h) = sites.iter().find(|s| s.site == "log_rec_header") {
        assert_eq!(h.heads, vec![32], "{h:?}");
    }

    // The table: heads of 4 bytes under [4, 8) and of 100 under [64, 128); tails of 408
    // under [256, 512); 512-byte totals under [512, 1024); 4 KiB blocks under [4096, 8192).
    let rows = m.calls.seed_rows(CallFilter::Updates);
    let row = |lo: u64| rows.iter().find(|r| r.lo == lo).expect("bucket");
    assert!(row(4).counts[1] > 0 && row(4).counts[0] == 0);
    assert!(row(64).counts[1] >= inode.calls);
    assert!(row(256).counts[2] >= inode.calls);
    assert!(row(512).counts[0] >= inode.calls);
    assert!(row(4096).counts[0] >= dir.calls);
    assert!(row(2048).counts[2] >= dir.calls, "4088-byte tails");
    for c in 0..3 {
        let sum: f64 = rows.iter().map(|r| r.freq_pct[c]).sum();
        assert!((sum - 100.0).abs() < 1e-6, "column {c} sums to {sum}");
    }
    // The stat block covers the measured phase: 150 files plus fs_mark's probe file.
    assert_eq!(m.stats.field("dir", "create"), Some(151));
    assert_eq!(m.stats.field("dir", "remove"), Some(151));
}

#[test]
fn single_pass_keeps_the_totals_and_drops_head_and_tail_calls() {
    let w = fsmark_s1();
    let split = run(CksumMode::Split, &w);
    let single = run(CksumMode::Single, &w);
    let hs = split.calls.seed_histograms(CallFilter::Updates);
    let h1 = single.calls.seed_histograms(CallFilter::Updates);
    // The same structures were checksummed: same totals, bucket for bucket.
    assert_eq!(h1.total, hs.total);
    assert!(h1.head.is_empty() && h1.tail.is_empty());
    assert!(!hs.head.is_empty() && !hs.tail.is_empty());
    let e_split = split
        .calls
        .engine_calls(CallFilter::Updates, SmallBelow::DEFAULT);
    let e_single = single
        .calls
        .engine_calls(CallFilter::Updates, SmallBelow::DEFAULT);
    assert_eq!(e_single.helper_calls, e_split.helper_calls);
    assert_eq!(e_single.bytes, e_split.bytes);
    assert_eq!(
        e_split.crc_calls,
        3 * e_single.crc_calls,
        "every labfs structure splits"
    );
    assert!(e_single.small_calls < e_split.small_calls);
    assert!(e_single.small_bytes < e_split.small_bytes);
}

#[test]
fn oltp_overwrites_and_churns_temporary_files() {
    let w = Workload::Oltp(OltpConfig {
        file_size: 4 << 20,
        writes: 200,
        ..OltpConfig::default()
    });
    let m = run(CksumMode::Split, &w);
    assert!(
        m.workload.summary.contains("200 writes"),
        "{}",
        m.workload.summary
    );
    let sites = m.calls.sites(CallFilter::Updates);
    let inode = sites
        .iter()
        .find(|s| s.site == "inode")
        .expect("inode updates");
    // Every fsync writes at least the file's inode.
    assert!(inode.calls >= 100 + 200 / 16, "{inode:?}");
    assert_eq!(m.stats.field("dir", "create"), Some(200 / 16));
    assert_eq!(m.stats.field("dir", "remove"), Some(200 / 16));
}

#[test]
fn live_progress_counts_the_files_and_writes_done() {
    let _serial = testing::serial();
    let lab = LabConfig::new(Default::default());
    let progress = LiveProgress::default();
    measure(&lab, CksumMode::Single, &fsmark_s1(), None, &progress).expect("fsmark");
    assert_eq!(progress.done(), 150);
    let oltp = Workload::Oltp(OltpConfig {
        file_size: 1 << 20,
        writes: 40,
        ..OltpConfig::default()
    });
    let progress = LiveProgress::default();
    measure(&lab, CksumMode::Single, &oltp, None, &progress).expect("oltp");
    assert_eq!(progress.done(), 40);
}
