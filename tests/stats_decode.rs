//! The stat decoder: our render, the host's real file, a 4.x-era file, newer and odd lines,
//! garbage, and diffs.

mod common;

use fslab::fs::stats::host::{clear_stats_at, read_stats_from};
use fslab::fs::stats::{
    DecodeError, HostStatsError, LineProblem, Stat, Stat64, StatDiff, StatFile, XfsStats,
    decode_text, layout,
};
use fslab::rng::SplitMix64;

/// The `/proc/fs/xfs/stat` lines quoted in seed 004 (linux-xfs, Nov 2016, a 4.x kernel), with
/// the `rmapbt` and `refcntbt` lines removed so the text has the pre-4.8 line set. The mail
/// elided `extent_alloc`, `abt`, `blk_map`, `bmbt`, `ig` and `debug`, so they are absent
/// here too: the fixture also exercises missing lines.
const SEED_004_4X: &str = "\
dir 79418 460612 460544 5685160
trans 0 3491960 0
log 89045 2859542 62 132145 143932
push_ail 3491960 24 619 53860 0 6433 13135 284324 0 445
xstrat 64342 0
rw 951375 2937203
attr 0 0 0 0
icluster 47412 38985 221903
vnodes 5294 0 0 0 381123 381123 381123 0
buf 4497307 6910 4497106 1054073 13012 201 0 0 0
abtb2 139597 675266 27639 27517 0 0 0 0 0 0 0 0 0 0 1411718
abtc2 240942 1207277 120532 120410 0 0 0 0 0 0 0 0 0 0 4618844
bmbt2 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
ibt2 762383 3048311 69 67 0 0 0 0 0 0 0 0 0 0 263
fibt2 1114420 2571311 143583 143582 0 0 0 0 0 0 0 0 0 0 1232534
qm 0 0 0 0 0 0 0 0
xpc 3366711296 24870568605 34799779740
";

fn assert_has(text: &str, needle: &str) {
    assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
}

#[test]
fn decoding_our_render_names_every_field_with_its_meaning() {
    let st = XfsStats::with_shards(2);
    st.add(Stat::LogWrites, 89045);
    st.add(Stat::LogBlocks, 2859542);
    st.add(Stat::DirCreate, 460612);
    st.add64(Stat64::WriteBytes, 24870568605);
    let text = st.snapshot().render();
    let decoded = decode_text(&text).expect("our render decodes");

    assert_has(&decoded, "log (journal writes and forces):\n");
    assert_has(&decoded, "log: writes = 89045 ");
    assert_has(
        &decoded,
        "(log write IOs: log records (iclogs) submitted to disk)",
    );
    assert_has(&decoded, "log: blocks = 2859542 = 1.4 GiB ");
    assert_has(&decoded, "dir: create = 460612 ");
    assert_has(&decoded, "xpc: write_bytes = 24870568605 = 23.2 GiB ");
    // Every line of the layout appears, all-zero ones collapsed to one line.
    for spec in layout::current_layout() {
        assert_has(&decoded, &format!("{} (", spec.name));
    }
    assert_has(
        &decoded,
        "rtrefcntbt (realtime reference-count btree): all 15 fields 0",
    );
    assert!(!decoded.contains("not in this text"), "{decoded}");
    // The raw form round-trips exactly.
    assert_eq!(
        StatFile::parse(&text).map(|f| f.render_raw()),
        Ok(text.clone())
    );
    assert_eq!(StatFile::from(&st.snapshot()).render_raw(), text);
}

#[test]
fn decoding_a_4x_file_without_rmapbt_lines_reads_seed_004s_figures() {
    let file = StatFile::parse(SEED_004_4X).expect("4.x text parses");
    assert_eq!(file.field("log", "writes"), Some(89045));
    assert_eq!(file.field("log", "force_sleep"), Some(143932));
    assert_eq!(file.field("fibt2", "insrec"), Some(143583));
    assert!(file.line("rmapbt").is_none());

    let decoded = file.decode();
    assert_has(&decoded, "log: writes = 89045 ");
    assert_has(&decoded, "log: blocks = 2859542 = 1.4 GiB ");
    assert_has(&decoded, "log: noiclogs = 62 ");
    assert_has(&decoded, "log: force = 132145 ");
    assert_has(&decoded, "log: force_sleep = 143932 ");
    assert_has(&decoded, "dir: getdents = 5685160 ");
    assert_has(&decoded, "trans: async = 3491960 ");
    assert_has(&decoded, "push_ail: flushing = 284324 ");
    assert_has(&decoded, "vnodes: active = 5294 ");
    assert_has(&decoded, "xpc: xstrat_bytes = 3366711296 = 3.1 GiB ");
    assert_has(&decoded, "abtc2: moves = 4618844 ");
    assert_has(
        &decoded,
        "bmbt2 (block-map btree (file extents)): all 15 fields 0",
    );
    // The lines this kernel did not print are listed, and nothing else.
    let note = decoded
        .lines()
        .find(|l| l.starts_with("(lines of the 6.14+ layout not in this text:"))
        .expect("absent-lines note");
    for absent in [
        "extent_alloc",
        "ig",
        "rmapbt",
        "refcntbt",
        "rtrefcntbt",
        "defer_relog",
    ] {
        assert!(
            note.split([' ', ')']).any(|w| w == absent),
            "{absent} in {note}"
        );
    }
    assert!(!note.split(' ').any(|w| w == "log"), "{note}");
}

#[test]
fn unknown_lines_print_raw_and_odd_field_counts_are_labelled() {
    let text = "trans 1 2 3 9\nlog 7 8 9\nfrobnicate 4 5 6\nzoned 1 2 3\ngc xpc 4096\n";
    let decoded = decode_text(text).expect("tolerated");
    assert_has(&decoded, "\nfrobnicate 4 5 6\n");
    assert_has(&decoded, "trans: field 4 = 9 ");
    assert_has(&decoded, "log: noiclogs = 9 ");
    assert_has(
        &decoded,
        "(log: force, force_sleep not printed by this kernel)",
    );
    assert_has(&decoded, "zoned: gc_zone_reset_calls = 3 ");
    assert_has(&decoded, "(zoned: pad not printed by this kernel)");
    assert_has(&decoded, "gc xpc: gc_bytes = 4096 = 4.0 KiB ");
}

#[test]
fn garbage_is_a_typed_error_naming_the_line_never_a_panic() {
    let cases: [(&str, usize); 6] = [
        ("log 1 2 3\nthis is not stat text\n", 2),
        ("\n\nlog 1 2 x\n", 3),
        ("42 43\n", 1),
        ("{\"log\": [1, 2]}\n", 1),
        ("log 1\nlog 2\n", 2),
        ("dir 1 2 3 4\nlog -5\n", 2),
    ];
    for (text, line) in cases {
        match StatFile::parse(text) {
            Err(DecodeError::Malformed { line: l, .. })
            | Err(DecodeError::Duplicate { line: l, .. }) => {
                assert_eq!(l, line, "{text:?}")
            }
            other => panic!("{text:?} gave {other:?}"),
        }
    }
    assert_eq!(StatFile::parse(" \n\n"), Err(DecodeError::Empty));
    let err = StatFile::parse("log 1\nlog2 1 two\n").expect_err("bad value");
    assert_eq!(
        err,
        DecodeError::Malformed {
            line: 2,
            text: "log2 1 two".into(),
            problem: LineProblem::NotANumber("two".into())
        }
    );
    assert!(err.to_string().contains("line 2"), "{err}");
}

#[test]
fn arbitrary_bytes_and_truncated_text_never_panic() {
    // A deterministic byte soup, biased toward digits, spaces and newlines.
    let mut rng = SplitMix64::new(0x9e37_79b9_7f4a_7c15);
    let alphabet = b"0123456789 \nlogxpc_\t\xff\x00-";
    for _ in 0..2000 {
        let len = rng.index(64);
        let bytes: Vec<u8> = (0..len)
            .map(|_| alphabet[rng.index(alphabet.len())])
            .collect();
        if let Ok(f) = StatFile::parse_bytes(&bytes) {
            let _ = f.decode();
        }
    }
    let full = XfsStats::new().snapshot().render();
    for cut in 0..full.len() {
        if let Ok(f) = StatFile::parse(&full[..cut]) {
            let _ = f.decode();
        }
    }
}

#[test]
fn diff_subtracts_per_field_with_u32_wrap_and_redecodes() {
    let st = XfsStats::with_shards(2);
    st.add(Stat::LogWrites, u32::MAX - 1);
    st.add(Stat::VnActive, 10);
    st.add64(Stat64::ReadBytes, 1 << 40);
    let before = StatFile::from(&st.snapshot());

    st.add(Stat::LogWrites, 5); // wraps past 2^32
    st.add(Stat::DirCreate, 7);
    st.dec(Stat::VnActive);
    st.dec(Stat::VnActive);
    st.add64(Stat64::ReadBytes, 6 << 32);
    let after = StatFile::from(&st.snapshot());

    let diff = StatDiff::between(&before, &after);
    assert_eq!(diff.file().field("log", "writes"), Some(5));
    assert_eq!(diff.file().field("dir", "create"), Some(7));
    assert_eq!(
        diff.file().field("vnodes", "active"),
        Some(u64::from(u32::MAX - 1))
    );
    assert_eq!(diff.file().field("xpc", "read_bytes"), Some(6 << 32));
    assert_eq!(diff.file().field("log", "blocks"), Some(0));
    assert_eq!(diff.file().lines().len(), 31);

    // Raw: the stat layout, decodable again to the same values.
    let raw = diff.render_raw();
    assert_has(&raw, "\nlog 5 0 0 0 0\n");
    assert_eq!(StatFile::parse(&raw).as_ref(), Ok(diff.file()));

    // Decoded: gauges as signed changes.
    let decoded = diff.decode();
    assert_has(&decoded, "after - before");
    assert_has(&decoded, "vnodes: active = -2 ");
    assert_has(&decoded, "log: writes = 5 ");
    assert_has(&decoded, "xpc: read_bytes = 25769803776 = 24.0 GiB ");
}

#[test]
fn diff_of_texts_from_different_kernels_counts_new_lines_from_zero() {
    let before = StatFile::parse("log 1 2 3 4 5\n").expect("parses");
    let after = StatFile::parse("log 2 4 6 8 10\nfrob 5000000000 3\ndebug 1\n").expect("parses");
    let diff = StatDiff::between(&before, &after);
    assert_eq!(
        diff.file().line("log").map(|l| l.values.clone()),
        Some(vec![1, 2, 3, 4, 5])
    );
    assert_eq!(
        diff.file().get("frob", 0),
        Some(5_000_000_000),
        "u64-sized unknown line"
    );
    assert_eq!(
        diff.file().get("debug", 0),
        Some(1),
        "debug is a flag, not a counter"
    );
}

#[test]
fn host_read_and_clear_report_missing_files_as_typed_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("stat");
    let err = read_stats_from(&missing).expect_err("missing");
    assert!(matches!(err, HostStatsError::Missing { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        format!(
            "no XFS statistics on this host ({} missing)",
            missing.display()
        )
    );

    let err = clear_stats_at(&dir.path().join("stats_clear")).expect_err("missing");
    assert!(err.to_string().contains("XFS is not loaded"), "{err}");

    // A stand-in sysctl file receives "1".
    let clear = dir.path().join("stats_clear");
    std::fs::write(&clear, "0\n").expect("write");
    clear_stats_at(&clear).expect("cleared");
    assert_eq!(std::fs::read_to_string(&clear).ok().as_deref(), Some("1\n"));

    // A file that is not stat text is a decode error naming the file.
    let bad = dir.path().join("bad");
    std::fs::write(&bad, "hello\n").expect("write");
    let err = read_stats_from(&bad).expect_err("not stat text");
    assert!(matches!(err, HostStatsError::Decode { .. }), "{err}");
    assert!(err.to_string().contains("line 1"), "{err}");
}

/// Tests on the host kernel's own statistics file: ignored unless asked for with
/// `--ignored kernel_xfs`, and then failing if the xfs module is not loaded (`tests/common`).
mod kernel_xfs {
    use super::*;
    use crate::common::xfs::{STAT_FILE, stat_file};

    #[test]
    #[ignore = "kernel XFS: needs the xfs module's /proc/fs/xfs/stat; run with --ignored kernel_xfs"]
    fn decoding_this_hosts_real_stat_file_keeps_every_line() {
        stat_file();
        let file = read_stats_from(std::path::Path::new(STAT_FILE))
            .unwrap_or_else(|e| panic!("host stat file did not read or parse: {e}"));
        let decoded = file.decode();
        for line in file.lines() {
            if layout::line_spec(&line.name).is_some() {
                assert_has(&decoded, &format!("{} (", line.name));
            } else {
                assert_has(&decoded, &line.name);
            }
        }
        // Diffing a snapshot against itself gives all zeros, except the debug flag.
        let same = StatDiff::between(&file, &file);
        for line in same.file().lines().iter().filter(|l| l.name != "debug") {
            assert!(line.values.iter().all(|&v| v == 0), "{line:?}");
        }
    }
}
