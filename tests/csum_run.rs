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
    // Every fsync forces the log: at least one record per file, each with a 328-byte header
    // split 32 + 4 + 292 (the histograms pin the mean; 328 is no bucket bound to prove it).
    let header = site("log_rec_header");
    assert!(header.calls >= 150, "{header:?}");
    assert_eq!(header.len, SizeDesc::Mean(328.0));
    assert_eq!(header.heads, vec![32]);
    assert_eq!(header.tail, SizeDesc::Mean(292.0));
    assert_eq!(header.crc_calls, 3 * header.calls);
    // Its payload is one whole-buffer call per record: no field, no head or tail.
    let payload = site("log_payload");
    assert_eq!(payload.calls, header.calls, "one payload range per record");
    assert!(payload.heads.is_empty(), "{payload:?}");
    assert_eq!(payload.tail, SizeDesc::None);
    assert_eq!(payload.crc_calls, payload.calls);

    // The table: 32-byte header heads under [32, 64), 100-byte inode heads under [64, 128);
    // the 328-byte headers and the 408/292-byte tails under [256, 512); 512-byte inodes
    // under [512, 1024).
    let rows = m.calls.seed_rows(CallFilter::Updates);
    let row = |lo: u64| rows.iter().find(|r| r.lo == lo).expect("bucket");
    assert!(row(32).counts[1] >= header.calls);
    assert!(row(64).counts[1] >= inode.calls);
    assert!(row(256).counts[0] >= header.calls);
    assert!(row(256).counts[2] >= inode.calls + header.calls);
    assert!(row(512).counts[0] >= inode.calls);
    for c in 0..3 {
        let sum: f64 = rows.iter().map(|r| r.freq_pct[c]).sum();
        assert!((sum - 100.0).abs() < 1e-6, "column {c} sums to {sum}");
    }
    // The stat block covers the measured phase: 150 files plus fs_mark's probe file, of
    // which the profile (kept, -k) removes only the probe.
    assert_eq!(m.stats.field("dir", "create"), Some(151));
    assert_eq!(m.stats.field("dir", "remove"), Some(1));
}

#[test]
fn the_measured_phase_ends_with_the_workloads_metadata_written_home() {
    let m = run(CksumMode::Split, &fsmark_s1());
    assert!(!m.workload.interrupted);
    let sites = m.calls.sites(CallFilter::Updates);
    let site = |name: &str| {
        sites
            .iter()
            .find(|s| s.site == name)
            .unwrap_or_else(|| panic!("no {name} in {sites:?}"))
    };
    // 151 entries of fs_mark's long names make a block-form directory, logged at every
    // create and written home only by the AIL: the quiesce at the end of the run pushes it.
    // Directory data blocks: 4096 bytes with 4-byte heads.
    let dir = site("dir3_data");
    assert_eq!(dir.len, SizeDesc::Exact(4096));
    assert_eq!(dir.heads, vec![4]);
    assert_eq!(dir.tail, SizeDesc::Exact(4088));
    assert_eq!(dir.crc_calls, 3 * dir.calls);
    // The inode chunk the files took and the space their data took: inobt, free-space
    // btrees and both AG headers go home too.
    for name in ["inobt", "bnobt", "cntbt", "agf", "agi"] {
        assert!(site(name).calls >= 1, "{name}");
    }
    let rows = m.calls.seed_rows(CallFilter::Updates);
    let row = |lo: u64| rows.iter().find(|r| r.lo == lo).expect("bucket");
    assert!(row(4).counts[1] >= dir.calls, "4-byte dir heads");
    assert!(row(2048).counts[2] >= dir.calls, "4088-byte tails");
    assert!(row(4096).counts[0] >= dir.calls);
    assert_eq!(m.stats.field("dir", "create"), Some(151));
    assert_eq!(
        m.stats.field("dir", "remove"),
        Some(1),
        "only the probe file"
    );
}

#[test]
fn large_log_records_carry_extended_headers_checksummed_whole() {
    // No fsync: the whole run is one checkpoint, forced at the end into 256 KiB records,
    // each with an extended header per further 32 KiB of payload.
    let Workload::Fsmark { mut config, .. } = fsmark_s1() else {
        unreachable!("fsmark-s1 is an fsmark run");
    };
    config.num_files = 1000;
    config.file_size = 0;
    config.sync = fslab::workload::fsmark::SyncMethod::NoSync;
    let w = Workload::Fsmark {
        config,
        command: "fsmark -d /csumhist -n 1000 -s 0 -S 0 -k".into(),
    };
    let _serial = testing::serial();
    let mut lab = LabConfig::new(Default::default());
    lab.options.mount.logbsize = 256 << 10;
    let m = measure(&lab, CksumMode::Split, &w, None, &LiveProgress::default()).expect("measure");
    let sites = m.calls.sites(CallFilter::Updates);
    let site = |name: &str| {
        sites
            .iter()
            .find(|s| s.site == name)
            .unwrap_or_else(|| panic!("no {name} in {sites:?}"))
    };
    let header = site("log_rec_header");
    let ext = site("log_ext_header");
    let payload = site("log_payload");
    // 260 bytes of xlog_rec_ext_header each, one crc32c call, no field.
    assert_eq!(ext.len, SizeDesc::Mean(260.0));
    assert!(ext.heads.is_empty(), "{ext:?}");
    assert_eq!(ext.crc_calls, ext.calls);
    // A record of p payload bytes needs ceil(p / 32 KiB) - 1 of them (so never more than 7
    // in a 256 KiB record), and over all records at least ceil(total / 32 KiB) - records.
    let least = payload.bytes.div_ceil(32 << 10) - u128::from(header.calls);
    assert!(least >= 1, "{payload:?} {header:?}");
    assert!(u128::from(ext.calls) >= least, "{ext:?} {payload:?}");
    assert!(ext.calls <= 7 * header.calls, "{ext:?} {header:?}");
    assert_eq!(header.heads, vec![32]);
    assert_eq!(payload.crc_calls, payload.calls);
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
    // Structures with a CRC field split into three calls; a log payload or extended
    // header has none, and stays one call in either mode.
    let sites = split.calls.sites(CallFilter::Updates);
    let (whole, fielded): (Vec<_>, Vec<_>) = sites
        .iter()
        .filter(|s| s.calls > 0)
        .partition(|s| s.heads.is_empty());
    for s in &whole {
        assert!(
            ["log_payload", "log_ext_header"].contains(&s.site.as_str()),
            "only log payloads and extended headers have no CRC field: {s:?}"
        );
    }
    for s in &fielded {
        assert_eq!(s.crc_calls, 3 * s.calls, "{s:?}");
    }
    let whole: u64 = whole.iter().map(|s| s.calls).sum();
    assert!(whole > 0, "the log records' payloads");
    assert_eq!(
        e_split.crc_calls,
        3 * e_single.crc_calls - 2 * whole,
        "split makes three calls per structure with a CRC field"
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
    // Every inode the run made or changed goes home at least once, with its CRC: the data
    // file and the 12 temporary files (freed ones go home too, marked free).
    let files = 1 + 200 / 16;
    assert!(inode.calls >= files, "{inode:?}");
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

/// A fiolike job built from its command line as csumhist builds it.
fn fio_job(args: &[&str]) -> Workload {
    use fslab::workload::fio::jobfile::{Keywords, ProcessEnv};
    use fslab::workload::fio::{cmdline, jobset};
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let cl = cmdline::parse(&args).expect("fio line");
    let jobs = jobset::build(
        &cl,
        &jobset::FsReader,
        &ProcessEnv,
        Keywords::of_this_machine(),
    )
    .expect("jobs");
    Workload::Fio {
        jobs,
        command: format!("fiolike {}", args.join(" ")),
    }
}

#[test]
fn a_fio_job_checksums_the_data_path_structures() {
    let w = fio_job(&[
        "--name=j",
        "--rw=randwrite",
        "--bs=16k",
        "--size=2m",
        "--fsync=2",
    ]);
    let m = run(CksumMode::Split, &w);
    assert!(!m.workload.interrupted);
    // 2 MiB in 16 KiB writes.
    assert!(
        m.workload.summary.contains("0 reads, 128 writes"),
        "{}",
        m.workload.summary
    );
    let sites = m.calls.sites(CallFilter::Updates);
    let site = |name: &str| {
        sites
            .iter()
            .find(|s| s.site == name)
            .unwrap_or_else(|| panic!("no {name} in {sites:?}"))
    };
    // Every fsync (64 of them) logs the file's inode, but as in XFS a logged inode carries
    // no CRC: it gets one (512 bytes, split 100 + 408) each time it is written home, which
    // the AIL does far less often than the file is logged.
    let inode = site("inode");
    assert!((1..64).contains(&inode.calls), "{inode:?}");
    assert_eq!(inode.len, SizeDesc::Exact(512));
    assert_eq!(inode.heads, vec![100]);
    // Laying out and filling the file allocates space: the AG header and its free-space
    // btrees are rewritten.
    assert!(site("agf").calls >= 1);
    assert!(site("bnobt").calls + site("cntbt").calls >= 1);
    // The job's directory entry lands in the root directory.
    assert_eq!(m.stats.field("dir", "create"), Some(1));
}
