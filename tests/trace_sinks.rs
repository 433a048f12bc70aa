//! Trace sinks under concurrency: ftrace text and JSON lines from 8 threads parsed back line by
//! line, ring overflow accounting, on-demand snapshot/drain, and session histograms.

use std::collections::HashMap;
use std::path::Path;
use std::thread;

use fslab::trace::{Dev, HistSpec, Log2Hist, TraceConfig, TraceFormat, events, testing};

const THREADS: usize = 8;
const PER_THREAD: u64 = 3000;
const SITES: [&str; 4] = ["inode", "agf", "btree_short", "dir_data"];
const CALLERS: [&str; 2] = ["xfs_file_fsync", "xfs_fs_sync_fs"];

/// The kernel thread id of the calling thread.
fn gettid() -> i32 {
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

fn online_cpus() -> u32 {
    // SAFETY: sysconf only reads a configuration value.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    u32::try_from(n).expect("positive cpu count")
}

/// What thread `t` fires as its `i`-th pair of events: a crc32c then a log force.
fn fire_pair(t: usize, i: u64) {
    events::crc32c(
        SITES[t % SITES.len()],
        i as u32,
        t as u32,
        (i % 7) as u32,
        "split",
        "crc32c",
    );
    events::xfs_log_force(
        Dev {
            major: 7,
            minor: t as u32,
        },
        i,
        CALLERS[(i % 2) as usize],
    );
}

/// The field text the kernel formats give for thread `t`'s `i`-th pair.
fn expected_fields(t: usize, i: u64, event: &str) -> String {
    match event {
        "crc32c" => format!(
            "site {} len {i} head {t} tail {} mode split engine crc32c",
            SITES[t % SITES.len()],
            i % 7
        ),
        "xfs_log_force" => format!("dev 7:{t} lsn {i:#x} caller {}", CALLERS[(i % 2) as usize]),
        other => panic!("unexpected event {other}"),
    }
}

/// Run `per_thread` pairs on each of `threads` named threads; returns (name, tid) per thread.
fn fire_from_threads(threads: usize, per_thread: u64) -> Vec<(String, i32)> {
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            thread::Builder::new()
                .name(format!("tw-{t}"))
                .spawn(move || {
                    for i in 0..per_thread {
                        fire_pair(t, i);
                    }
                    (format!("tw-{t}"), gettid())
                })
                .expect("spawn")
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().expect("firing thread"))
        .collect()
}

/// One parsed ftrace event line.
#[derive(Debug)]
struct FtraceLine {
    task: String,
    pid: i32,
    cpu: u32,
    flags: String,
    ts_us: u64,
    event: String,
    fields: String,
}

/// Parse `%16s-%-7d [%03d] %5s %5lu.%06lu: event: fields`, checking the fixed columns.
fn parse_ftrace_line(line: &str) -> FtraceLine {
    assert!(line.len() > 40, "short line {line:?}");
    let task = line[..16].trim_start().to_string();
    assert_eq!(&line[16..17], "-", "{line:?}");
    let pid_col = &line[17..24];
    assert_eq!(pid_col.trim_end().len(), pid_col.trim().len(), "{line:?}");
    let pid: i32 = pid_col.trim().parse().expect("pid");
    let rest = &line[24..];
    assert_eq!(&rest[..2], " [", "{line:?}");
    let cpu_txt = &rest[2..5];
    assert!(cpu_txt.chars().all(|c| c.is_ascii_digit()), "{line:?}");
    assert_eq!(&rest[5..7], "] ", "{line:?}");
    let flags = rest[7..12].to_string();
    let rest = &rest[12..];
    let (ts, rest) = rest.split_once(": ").expect("timestamp colon");
    assert!(ts.len() >= 13, "timestamp column is %5lu.%06lu: {ts:?}");
    let (secs, usecs) = ts.trim().split_once('.').expect("seconds.micros");
    assert_eq!(usecs.len(), 6, "{ts:?}");
    let ts_us = secs.parse::<u64>().expect("secs") * 1_000_000 + usecs.parse::<u64>().expect("us");
    let (event, fields) = rest.split_once(": ").expect("event colon");
    FtraceLine {
        task,
        pid,
        cpu: cpu_txt.parse().expect("cpu"),
        flags,
        ts_us,
        event: event.to_string(),
        fields: fields.to_string(),
    }
}

/// Check the 12 header lines and return (entries-in-buffer, entries-written).
fn check_ftrace_header(lines: &[&str]) -> (u64, u64) {
    let legend = [
        "# tracer: nop",
        "#",
        "",
        "#",
        "#                                _-----=> irqs-off/BH-disabled",
        "#                               / _----=> need-resched",
        "#                              | / _---=> hardirq/softirq",
        "#                              || / _--=> preempt-depth",
        "#                              ||| / _-=> migrate-disable",
        "#                              |||| /     delay",
        "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION",
        "#              | |         |   |||||     |         |",
    ];
    assert!(lines.len() >= legend.len());
    for (i, want) in legend.iter().enumerate() {
        if i != 2 {
            assert_eq!(lines[i], *want, "header line {}", i + 1);
        }
    }
    let entries = lines[2]
        .strip_prefix("# entries-in-buffer/entries-written: ")
        .expect("entries line");
    let (counts, cpus) = entries.split_once("   #P:").expect("#P after three spaces");
    assert_eq!(cpus.parse::<u32>().expect("cpu count"), online_cpus());
    let (kept, written) = counts.split_once('/').expect("kept/written");
    (
        kept.parse().expect("kept"),
        written.parse().expect("written"),
    )
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).expect("trace output readable")
}

#[test]
fn ftrace_text_from_eight_threads_parses_back_complete_and_ordered() {
    let _serial = testing::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("trace.txt");
    let session = TraceConfig {
        events: "crc32c,xfs_log_force".into(),
        format: TraceFormat::Ftrace,
        out: Some(out.clone()),
        ..TraceConfig::default()
    }
    .start()
    .expect("start");
    let tasks = fire_from_threads(THREADS, PER_THREAD);
    let summary = session.finish().expect("finish");

    let total = THREADS as u64 * PER_THREAD * 2;
    assert_eq!(summary.count("crc32c"), Some(THREADS as u64 * PER_THREAD));
    assert_eq!(
        summary.count("xfs_log_force"),
        Some(THREADS as u64 * PER_THREAD)
    );
    assert_eq!(
        (summary.entries_in_buffer, summary.entries_written),
        (total, total)
    );
    assert_eq!((summary.overwritten, summary.dropped), (0, 0));
    assert_eq!(summary.threads, THREADS);

    let text = read(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(check_ftrace_header(&lines), (total, total));
    let body = &lines[12..];
    assert_eq!(body.len() as u64, total);

    let by_tid: HashMap<i32, usize> = tasks
        .iter()
        .enumerate()
        .map(|(t, (_, tid))| (*tid, t))
        .collect();
    let mut next: Vec<(u64, &str)> = vec![(0, "crc32c"); THREADS];
    let mut last_ts = [0u64; THREADS];
    let mut prev_ts = 0;
    for line in body {
        let l = parse_ftrace_line(line);
        let t = *by_tid
            .get(&l.pid)
            .unwrap_or_else(|| panic!("unknown pid in {line:?}"));
        assert_eq!(l.task, tasks[t].0);
        assert_eq!(l.flags, ".....");
        assert!(l.cpu < online_cpus(), "{line:?}");
        // Merged output is in time order, and each thread's events keep their order.
        assert!(l.ts_us >= prev_ts && l.ts_us >= last_ts[t], "{line:?}");
        prev_ts = l.ts_us;
        last_ts[t] = l.ts_us;
        let (i, want_event) = next[t];
        assert_eq!(l.event, want_event, "thread {t} event order at {i}");
        assert_eq!(l.fields, expected_fields(t, i, want_event));
        next[t] = if want_event == "crc32c" {
            (i, "xfs_log_force")
        } else {
            (i + 1, "crc32c")
        };
    }
    assert!(next.iter().all(|&(i, e)| i == PER_THREAD && e == "crc32c"));
}

#[test]
fn json_lines_from_eight_threads_parse_back_with_typed_fields() {
    let _serial = testing::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("trace.json");
    let session = TraceConfig {
        events: "crc32c,xfs_log_force".into(),
        format: TraceFormat::Json,
        out: Some(out.clone()),
        ..TraceConfig::default()
    }
    .start()
    .expect("start");
    let tasks = fire_from_threads(THREADS, PER_THREAD);
    let summary = session.finish().expect("finish");
    let total = THREADS as u64 * PER_THREAD * 2;
    assert_eq!(summary.entries_in_buffer, total);

    let text = read(&out);
    let by_tid: HashMap<i64, usize> = tasks
        .iter()
        .enumerate()
        .map(|(t, (_, tid))| (i64::from(*tid), t))
        .collect();
    let mut next = [0u64; THREADS * 2];
    let mut prev_ts = 0.0f64;
    let mut n = 0u64;
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("each line is JSON");
        let obj = v.as_object().expect("object");
        let keys: Vec<&str> = obj.keys().map(String::as_str).collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, ["cpu", "event", "fields", "pid", "task", "ts"]);
        let t = by_tid[&v["pid"].as_i64().expect("pid number")];
        assert_eq!(v["task"], tasks[t].0.as_str());
        assert!(v["cpu"].as_u64().expect("cpu number") < u64::from(online_cpus()));
        let ts = v["ts"].as_f64().expect("ts number");
        assert!(ts >= prev_ts);
        prev_ts = ts;
        let f = &v["fields"];
        match v["event"].as_str().expect("event string") {
            "crc32c" => {
                let i = next[t * 2];
                assert_eq!(f["site"], SITES[t % SITES.len()]);
                assert_eq!(f["len"].as_u64(), Some(i));
                assert_eq!(f["head"].as_u64(), Some(t as u64));
                assert_eq!(f["tail"].as_u64(), Some(i % 7));
                assert_eq!(
                    (&f["mode"], &f["engine"]),
                    (&"split".into(), &"crc32c".into())
                );
                // A crc32c is always followed by the log force of the same i.
                assert_eq!(next[t * 2 + 1], i);
                next[t * 2] += 1;
            }
            "xfs_log_force" => {
                let i = next[t * 2 + 1];
                assert_eq!(f["dev"]["major"].as_u64(), Some(7));
                assert_eq!(f["dev"]["minor"].as_u64(), Some(t as u64));
                assert_eq!(f["lsn"].as_u64(), Some(i));
                assert_eq!(f["caller"], CALLERS[(i % 2) as usize]);
                assert_eq!(next[t * 2], i + 1);
                next[t * 2 + 1] += 1;
            }
            other => panic!("unexpected event {other}"),
        }
        n += 1;
    }
    assert_eq!(n, total);
    assert!(next.iter().all(|&i| i == PER_THREAD));
}

#[test]
fn full_rings_keep_the_newest_entries_and_account_for_the_rest() {
    let _serial = testing::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("trace.txt");
    let ring = 100usize;
    let threads = 4usize;
    let per_thread = 1000u64;
    let session = TraceConfig {
        events: "crc32c".into(),
        out: Some(out.clone()),
        ring_entries_per_thread: ring,
        histograms: vec![HistSpec::new("crc32c", "len")],
        ..TraceConfig::default()
    }
    .start()
    .expect("start");
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            thread::spawn(move || {
                for i in 0..per_thread {
                    events::crc32c("inode", i as u32, t as u32, 0, "single", "crc32c");
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("firing thread");
    }
    let summary = session.finish().expect("finish");

    let kept = (threads * ring) as u64;
    let written = threads as u64 * per_thread;
    assert_eq!(summary.entries_in_buffer, kept);
    assert_eq!(summary.entries_written, written);
    assert_eq!(summary.overwritten, written - kept);
    // Counts and histograms bypass the rings: exact despite the overflow.
    assert_eq!(summary.count("crc32c"), Some(written));
    let hist = summary.histogram("crc32c.len").expect("histogram").total();
    assert_eq!(hist.total_count(), written);
    let sum_per_thread: u128 = (0..u128::from(per_thread)).sum();
    assert_eq!(hist.total_bytes(), sum_per_thread * threads as u128);

    let text = read(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(check_ftrace_header(&lines), (kept, written));
    let mut lens_by_head: HashMap<String, Vec<u64>> = HashMap::new();
    for line in &lines[12..] {
        let l = parse_ftrace_line(line);
        let words: Vec<&str> = l.fields.split(' ').collect();
        lens_by_head
            .entry(words[5].to_string())
            .or_default()
            .push(words[3].parse().expect("len"));
    }
    assert_eq!(lens_by_head.len(), threads);
    let newest: Vec<u64> = (per_thread - ring as u64..per_thread).collect();
    for lens in lens_by_head.values() {
        assert_eq!(
            lens, &newest,
            "each thread keeps its newest {ring}, in order"
        );
    }
}

#[test]
fn snapshot_leaves_records_and_drain_consumes_them() {
    let _serial = testing::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("trace.txt");
    let session = TraceConfig {
        events: "xfs_ail_push".into(),
        out: Some(out.clone()),
        ..TraceConfig::default()
    }
    .start()
    .expect("start");
    let dev = Dev { major: 7, minor: 0 };
    for i in 0..10u64 {
        events::xfs_ail_push(dev, 0x1000 + i, (1 << 32) | i, "XFS_LI_INODE", "IN_AIL");
    }
    let mut snap = Vec::new();
    session.snapshot(&mut snap).expect("snapshot");
    let snap = String::from_utf8(snap).expect("utf8");
    let lines: Vec<&str> = snap.lines().collect();
    assert_eq!(check_ftrace_header(&lines), (10, 10));
    assert_eq!(lines.len(), 12 + 10);
    assert_eq!(
        parse_ftrace_line(lines[12]).fields,
        "dev 7:0 lip 0000000000001000 lsn 1/0 type XFS_LI_INODE flags IN_AIL"
    );
    let mut again = Vec::new();
    session.snapshot(&mut again).expect("snapshot");
    assert_eq!(String::from_utf8(again).expect("utf8"), snap);

    let mut piped = Vec::new();
    assert_eq!(session.drain(&mut piped).expect("drain"), 10);
    let piped = String::from_utf8(piped).expect("utf8");
    assert_eq!(piped.lines().collect::<Vec<_>>(), lines[12..].to_vec());
    let mut empty = Vec::new();
    assert_eq!(session.drain(&mut empty).expect("drain"), 0);
    assert!(empty.is_empty());

    for i in 10..15u64 {
        events::xfs_ail_push(dev, 0x1000 + i, (1 << 32) | i, "XFS_LI_INODE", "IN_AIL");
    }
    assert_eq!(session.counts()[0].count, 15);
    let summary = session.finish().expect("finish");
    assert_eq!(
        (
            summary.entries_in_buffer,
            summary.consumed,
            summary.entries_written
        ),
        (5, 10, 15)
    );
    let text = read(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(check_ftrace_header(&lines), (5, 5));
    assert!(parse_ftrace_line(lines[12]).fields.contains("lsn 1/10 "));
}

#[test]
fn grouped_histograms_are_exact_per_site_across_threads() {
    let _serial = testing::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("never-written.txt");
    // No recorded events: histograms only, so no output file either.
    let session = TraceConfig {
        events: String::new(),
        out: Some(out.clone()),
        ring_entries_per_thread: 1,
        histograms: vec![
            "crc32c.len/site".parse().expect("spec"),
            "crc32c.head".parse().expect("spec"),
        ],
        ..TraceConfig::default()
    }
    .start()
    .expect("start");
    assert!(session.recorded_events().is_empty());
    assert_eq!(session.enabled_events(), vec!["crc32c"]);
    // Structure sizes and CRC offsets as in XFS v5: inode 512 @100, AGF 512 @216, a log
    // record header sector 512 @32 plus 32 KiB iclog bodies with no head.
    let handles: Vec<_> = (0..THREADS)
        .map(|_| {
            thread::spawn(|| {
                for _ in 0..500 {
                    events::crc32c("inode", 512, 100, 408, "split", "crc32c");
                }
                for _ in 0..100 {
                    events::crc32c("agf", 512, 216, 292, "split", "crc32c");
                    events::crc32c("log", 32768, 0, 0, "single", "crc32c");
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("firing thread");
    }
    let summary = session.finish().expect("finish");
    assert!(!out.exists(), "no events selected for output, so no file");
    let n = THREADS as u64;
    assert_eq!(summary.count("crc32c"), Some(n * 700));

    let by_site = summary.histogram("crc32c.len/site").expect("grouped");
    let keys: Vec<_> = by_site.groups.iter().map(|(k, _)| k.clone()).collect();
    assert_eq!(
        keys,
        vec![Some("agf".into()), Some("inode".into()), Some("log".into())]
    );
    let inode = by_site.group("inode").expect("inode group");
    assert_eq!(inode.bucket_of(512).count, n * 500);
    assert_eq!(inode.bucket_of(512).range_label(), "[512, 1024)");
    assert_eq!(inode.total_bytes(), u128::from(n * 500 * 512));
    let log = by_site.group("log").expect("log group");
    assert_eq!(log.bucket_of(32768).ilog2, Some(15));
    assert_eq!(log.total_count(), n * 100);
    let mut expected_total = Log2Hist::new();
    expected_total.record_n(512, n * 600);
    expected_total.record_n(32768, n * 100);
    assert_eq!(by_site.total(), expected_total);

    let heads = summary.histogram("crc32c.head").expect("ungrouped");
    assert_eq!(heads.groups.len(), 1);
    let h = &heads.groups[0].1;
    assert_eq!(h.bucket_of(0).count, n * 100);
    assert_eq!(h.bucket_of(100).count, n * 500);
    assert_eq!(h.bucket_of(216).count, n * 100);
    assert_eq!(h.bucket_of(100).count_pct, 500.0 * 100.0 / 700.0);

    let rendered = by_site.render_bpftrace();
    assert!(rendered.starts_with("@crc32c.len[agf]:\n"));
    assert!(rendered.contains("\n@crc32c.len[inode]:\n[512, 1K)     "));
    let table = heads.render_table();
    assert!(table.starts_with("crc32c.head:\nilog2  range"));
    assert!(table.contains("    6  [64, 128)"));
}

/// A live session changes what it records, keeps and drops histograms, pauses and clears,
/// as tracefs's `set_event`, `hist` triggers, `tracing_on` and `echo > trace` do.
#[test]
fn a_live_session_is_reconfigured_like_tracefs() {
    let _serial = testing::serial();
    let mut s = TraceConfig {
        events: "crc32c".into(),
        ..TraceConfig::default()
    }
    .start()
    .unwrap();
    let snapshot_lines = |s: &fslab::trace::Session| {
        let mut out = Vec::new();
        s.snapshot(&mut out).unwrap();
        String::from_utf8(out)
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    fire_pair(0, 1);
    assert_eq!(snapshot_lines(&s).len(), 1, "only crc32c is recorded");
    s.set_recorded(fslab::trace::EventSet::parse("xfs_log_force").unwrap());
    fire_pair(0, 2);
    let lines = snapshot_lines(&s);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[1].contains("xfs_log_force"), "{lines:?}");

    // A histogram added now counts from now on, even of an event not recorded.
    let spec = HistSpec::new("crc32c", "len");
    s.add_histogram(spec.clone()).unwrap();
    assert!(s.add_histogram(spec.clone()).is_err(), "duplicate trigger");
    fire_pair(0, 4096);
    fire_pair(0, 4096);
    let h = s.histograms();
    assert_eq!(h.len(), 1);
    assert_eq!(h[0].total().total_count(), 2);
    assert_eq!(snapshot_lines(&s).len(), 4, "crc32c still not recorded");

    // Paused: nothing fires; resumed: it does again.
    s.set_paused(true);
    fire_pair(0, 5);
    assert_eq!(snapshot_lines(&s).len(), 4);
    assert_eq!(s.histograms()[0].total().total_count(), 2);
    s.set_paused(false);
    fire_pair(0, 6);
    assert_eq!(snapshot_lines(&s).len(), 5);

    // Clearing empties the rings but keeps histograms; removing a trigger drops its counts.
    s.clear_records();
    assert!(snapshot_lines(&s).is_empty());
    assert_eq!(s.histograms()[0].total().total_count(), 3);
    assert!(s.remove_histogram(&spec));
    assert!(!s.remove_histogram(&spec));
    assert!(s.histograms().is_empty());
    s.add_histogram(spec).unwrap();
    assert_eq!(
        s.histograms()[0].total().total_count(),
        0,
        "a new trigger starts empty"
    );
    let summary = s.finish().unwrap();
    assert_eq!(summary.histograms.len(), 1);
}
