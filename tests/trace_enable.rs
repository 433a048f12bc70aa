//! Enabling and disabling events through sessions: globs, exclusions, errors that name the
//! bad term, one session per process, and nothing firing outside a session.

use fslab::trace::{
    Dev, HistSpec, TraceConfig, TraceError, TraceFormat, events, find, list, testing,
};

const DEV: Dev = Dev { major: 7, minor: 0 };

fn enabled_names() -> Vec<&'static str> {
    list()
        .iter()
        .filter(|e| e.is_enabled())
        .map(|e| e.name())
        .collect()
}

#[test]
fn glob_session_enables_only_matching_events_and_finish_disables_them() {
    let _serial = testing::serial();
    assert!(enabled_names().is_empty());
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("ail.txt");
    let session = TraceConfig {
        events: "xfs_ail_*,!xfs_ail_move".into(),
        out: Some(out.clone()),
        ..TraceConfig::default()
    }
    .start()
    .expect("start");
    let want = vec![
        "xfs_ail_push",
        "xfs_ail_pinned",
        "xfs_ail_locked",
        "xfs_ail_flushing",
        "xfs_ail_insert",
        "xfs_ail_delete",
    ];
    assert_eq!(enabled_names(), want);
    assert_eq!(session.recorded_events(), want);

    events::xfs_log_force(DEV, 1, "not_enabled");
    events::xfs_ail_move(DEV, 0x10, 1, 2, "XFS_LI_BUF", "IN_AIL");
    events::xfs_ail_insert(DEV, 0x10, 0, (3 << 32) | 64, "XFS_LI_BUF", "IN_AIL");
    events::xfs_ail_pinned(DEV, 0x10, (3 << 32) | 64, "XFS_LI_BUF", "IN_AIL");
    let summary = session.finish().expect("finish");
    assert!(enabled_names().is_empty(), "finish disables every event");

    assert_eq!(summary.count("xfs_log_force"), None);
    assert_eq!(summary.count("xfs_ail_move"), None);
    assert_eq!(summary.count("xfs_ail_insert"), Some(1));
    assert_eq!(summary.count("xfs_ail_pinned"), Some(1));
    assert_eq!(summary.count("xfs_ail_push"), Some(0));
    let text = std::fs::read_to_string(&out).expect("output");
    let body: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(body.len(), 2);
    assert!(body[0].ends_with(
        ": xfs_ail_insert: dev 7:0 lip 0000000000000010 old lsn 0/0 new lsn 3/64 \
         type XFS_LI_BUF flags IN_AIL"
    ));
    assert!(body[1].contains(": xfs_ail_pinned: dev 7:0 "));
    let counts = summary.render_counts();
    assert!(counts.starts_with("event             count\n"));
    assert!(counts.contains("\nxfs_ail_insert        1\n"));
}

#[test]
fn writeback_glob_and_all_select_the_expected_sets() {
    let _serial = testing::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let session = TraceConfig {
        events: "*writeback*".into(),
        format: TraceFormat::Json,
        out: Some(dir.path().join("wb.json")),
        ..TraceConfig::default()
    }
    .start()
    .expect("start");
    assert_eq!(
        enabled_names(),
        vec!["sb_mark_inode_writeback", "sb_clear_inode_writeback"]
    );
    events::sb_mark_inode_writeback(DEV, 131, 4_294_892_296, "I_DIRTY_PAGES", 0o100644);
    let summary = session.finish().expect("finish");
    assert_eq!(summary.count("sb_mark_inode_writeback"), Some(1));
    let text = std::fs::read_to_string(dir.path().join("wb.json")).expect("output");
    let v: serde_json::Value = serde_json::from_str(text.trim_end()).expect("one JSON line");
    assert_eq!(v["fields"]["mode"].as_u64(), Some(0o100644));
    assert_eq!(v["fields"]["state"], "I_DIRTY_PAGES");

    let session = TraceConfig {
        events: "all".into(),
        out: Some(dir.path().join("all.txt")),
        ..TraceConfig::default()
    }
    .start()
    .expect("start");
    assert_eq!(enabled_names().len(), list().len());
    drop(session);
    assert!(
        enabled_names().is_empty(),
        "dropping a session disables too"
    );
}

#[test]
fn unknown_pattern_fails_start_naming_it_and_enables_nothing() {
    let _serial = testing::serial();
    let err = TraceConfig {
        events: "xfs_log_force,xfs_ail_psh*".into(),
        ..TraceConfig::default()
    }
    .start()
    .expect_err("typo in pattern");
    assert!(matches!(&err, TraceError::NoSuchEvent(p) if p == "xfs_ail_psh*"));
    assert_eq!(
        err.to_string(),
        "no trace event matches 'xfs_ail_psh*' (see the event list)"
    );
    assert!(enabled_names().is_empty());
    // The failed start left no session behind.
    let ok = TraceConfig::default()
        .start()
        .expect("a fresh session starts");
    ok.finish().expect("finish");
}

#[test]
fn bad_configurations_fail_before_anything_is_enabled() {
    let _serial = testing::serial();
    let bad_hist = TraceConfig {
        events: "crc32c".into(),
        histograms: vec![HistSpec::new("crc32c", "mode")],
        ..TraceConfig::default()
    }
    .start()
    .expect_err("string field cannot key a histogram");
    assert!(matches!(bad_hist, TraceError::BadHistSpec { .. }));
    assert!(bad_hist.to_string().contains("crc32c.mode"));

    let zero_ring = TraceConfig {
        events: "crc32c".into(),
        ring_entries_per_thread: 0,
        ..TraceConfig::default()
    }
    .start()
    .expect_err("empty ring");
    assert!(matches!(zero_ring, TraceError::BadRingSize));

    let missing = std::path::PathBuf::from("/nonexistent-fslab-dir/trace.txt");
    let no_dir = TraceConfig {
        events: "crc32c".into(),
        out: Some(missing),
        ..TraceConfig::default()
    }
    .start()
    .expect_err("unwritable output");
    assert!(
        matches!(&no_dir, TraceError::Output { path, .. } if path.contains("nonexistent-fslab-dir"))
    );
    assert!(enabled_names().is_empty());
}

#[test]
fn only_one_session_runs_at_a_time() {
    let _serial = testing::serial();
    let first = TraceConfig {
        histograms: vec![HistSpec::new("xfs_log_force", "lsn")],
        ..TraceConfig::default()
    }
    .start()
    .expect("first");
    let second = TraceConfig {
        events: "crc32c".into(),
        ..TraceConfig::default()
    }
    .start()
    .expect_err("second while first runs");
    assert!(matches!(second, TraceError::SessionActive));
    // The refused session changed nothing: crc32c stays off, the first keeps counting.
    assert!(!find("crc32c").expect("declared").is_enabled());
    events::xfs_log_force(DEV, 4096, "xfs_file_fsync");
    let summary = first.finish().expect("finish");
    assert_eq!(summary.count("xfs_log_force"), Some(1));
    let lsn = summary
        .histogram("xfs_log_force.lsn")
        .expect("hist")
        .total();
    assert_eq!(lsn.bucket_of(4096).count, 1);
}

#[test]
fn events_outside_a_session_are_ignored() {
    let _serial = testing::serial();
    let len_hist = || TraceConfig {
        histograms: vec![HistSpec::new("crc32c", "len")],
        ..TraceConfig::default()
    };
    // Disabled: nothing happens at all.
    events::crc32c("inode", 512, 100, 408, "split", "crc32c");
    events::xlog_iclog_sync(DEV, "XLOG_STATE_WANT_SYNC", 1, 0, 0, "", "x");

    let s = len_hist().start().expect("start");
    events::crc32c("inode", 512, 100, 408, "split", "crc32c");
    let first = s.finish().expect("finish");
    // Fired between sessions: counted by neither.
    events::crc32c("inode", 512, 100, 408, "split", "crc32c");
    let second = len_hist().start().expect("start").finish().expect("finish");
    assert_eq!(first.count("crc32c"), Some(1));
    assert_eq!(second.count("crc32c"), Some(0));
    assert!(
        second
            .histogram("crc32c.len")
            .expect("hist")
            .total()
            .is_empty()
    );
}
