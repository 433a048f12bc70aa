//! labfs's trace text against real kernel lines, field for field.
//!
//! The kernel lines are the ones `scripts/record_kernel_fixtures.sh` captured on this machine's
//! kernel (`tests/fixtures/kernel/*/trace_sample.txt`). Each line is reduced to its layout:
//! the ftrace columns (task right-aligned in 16, pid left-aligned in 7, `[CPU]` in 3 digits,
//! five flag characters, `seconds.micros`), then every word of the event's text, where field
//! names stay as they are and values become their shape (`N` decimal, `0xH` hex, `N:N` device,
//! `N,N` writeback device, `N/N` cycle/block LSN, `0O` octal mode, `P` hashed pointer, `F` a
//! `|`-joined flag set, possibly empty, `SYM` a caller). Two lines match when their layouts are
//! equal: same fields, same order, same separators, same value formats. Only values differ.
//!
//! `sb_mark_inode_writeback`, `sb_clear_inode_writeback`, `xfs_log_force` and
//! `xlog_iclog_sync` come from a real labfs write and fsync; the other log and AIL events'
//! print templates are checked by firing the events directly. The one difference the layout
//! allows is the caller: the kernel's `%pS` prints `symbol+0xoff/0xsize`, labfs the bare
//! symbol (it has no kernel image to take offsets from); the symbol itself is compared.

use std::collections::BTreeMap;
use std::path::Path;

use fslab::backend::OpenFlags;
use fslab::backend::open::{BackendConfig, LabConfig, open};
use fslab::trace::{Dev, TraceConfig, events, testing};

/// One caller field: the kernel's `%pS` prints `symbol+0xoff/0xsize`, labfs the symbol.
fn is_symbol(t: &str) -> bool {
    let sym = t.split('+').next().unwrap_or("");
    let sym_ok = sym
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && sym.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    let offset_ok = match t.split_once('+') {
        None => true,
        Some((_, off)) => off.split('/').all(|h| {
            h.strip_prefix("0x")
                .is_some_and(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()))
        }),
    };
    sym_ok && offset_ok
}

fn all(t: &str, f: impl Fn(char) -> bool) -> bool {
    !t.is_empty() && t.chars().all(f)
}

fn pair(t: &str, sep: char) -> bool {
    t.split_once(sep)
        .is_some_and(|(a, b)| all(a, |c| c.is_ascii_digit()) && all(b, |c| c.is_ascii_digit()))
}

/// The shape of one word of an event's text (`prev` is the word before it).
fn shape(word: &str, prev: &str) -> String {
    let s = if prev == "caller" && is_symbol(word) {
        "SYM"
    } else if word.is_empty() {
        // An empty flag set prints nothing between the spaces.
        "F"
    } else if all(word, |c| c.is_ascii_lowercase() || c == '_') {
        // A field name.
        return word.to_string();
    } else if word.len() == 16 && all(word, |c| c.is_ascii_hexdigit()) {
        "P"
    } else if pair(word, ':') {
        "N:N"
    } else if pair(word, ',') {
        "N,N"
    } else if pair(word, '/') {
        "N/N"
    } else if word
        .strip_prefix("0x")
        .is_some_and(|h| all(h, |c| c.is_ascii_hexdigit()))
    {
        "0xH"
    } else if word.len() > 1 && word.starts_with('0') && all(word, |c| ('0'..='7').contains(&c)) {
        "0O"
    } else if all(word, |c| c.is_ascii_digit()) {
        "N"
    } else if word.chars().any(|c| c.is_ascii_uppercase())
        && all(word, |c| {
            c.is_ascii_uppercase() || c.is_ascii_digit() || "_|".contains(c)
        })
    {
        // A symbolic value or a `|`-joined flag set: XLOG_STATE_SYNCING, XFS_LI_BUF,
        // XLOG_ICL_NEED_FLUSH|XLOG_ICL_NEED_FUA, I_DIRTY_PAGES.
        "F"
    } else {
        return format!("?{word}");
    };
    s.to_string()
}

/// The layout of one ftrace line: (event name, column layout, text layout).
fn layout(line: &str) -> (String, String, Vec<String>) {
    assert!(line.len() > 40, "short line {line:?}");
    let task = &line[..16];
    assert!(
        !task.ends_with(' ') || task.trim().is_empty(),
        "task right-aligned in 16: {line:?}"
    );
    assert_eq!(&line[16..17], "-", "{line:?}");
    let pid = &line[17..24];
    assert!(
        pid.trim_end().chars().all(|c| c.is_ascii_digit()) && !pid.starts_with(' '),
        "pid left-aligned in 7: {line:?}"
    );
    let rest = &line[24..];
    let cpu_ok = rest.starts_with(" [")
        && rest[2..5].chars().all(|c| c.is_ascii_digit())
        && &rest[5..7] == "] ";
    assert!(cpu_ok, "[CPU] in 3 digits: {line:?}");
    let flags = &rest[7..12];
    let rest = &rest[12..];
    let (ts, rest) = rest.split_once(": ").expect("timestamp colon");
    let (secs, usecs) = ts.trim_start().split_once('.').expect("seconds.micros");
    let columns = format!(
        "flags:{} ts:{}{}.{}",
        flags.len(),
        if ts.len() >= 13 { "wide" } else { "narrow" },
        if all(secs, |c| c.is_ascii_digit()) {
            "N"
        } else {
            "?"
        },
        if usecs.len() == 6 && all(usecs, |c| c.is_ascii_digit()) {
            "NNNNNN"
        } else {
            "?"
        },
    );
    let (event, text) = rest.split_once(": ").expect("event colon");
    let mut prev = "";
    let mut words = Vec::new();
    for w in text.split(' ') {
        words.push(shape(w, prev));
        prev = w;
    }
    (event.to_string(), columns, words)
}

/// Every recorded kernel line of `event`, from all fixtures.
fn kernel_lines(event: &str) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kernel");
    let mut lines = Vec::new();
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .expect("kernel fixtures")
        .map(|e| e.expect("entry").path())
        .collect();
    dirs.sort();
    for dir in dirs {
        let text = std::fs::read_to_string(dir.join("trace_sample.txt")).expect("samples");
        lines.extend(
            text.lines()
                .filter(|l| l.contains(&format!(" {event}: ")))
                .map(str::to_string),
        );
    }
    lines
}

/// Check that every labfs line of each event has the layout of every kernel line of it.
fn assert_same_layout(labfs: &str, events: &[&str]) {
    let mut ours: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for line in labfs.lines().filter(|l| !l.starts_with('#')) {
        let (event, _, _) = layout(line);
        ours.entry(event).or_default().push(line);
    }
    for event in events {
        let kernel = kernel_lines(event);
        assert!(!kernel.is_empty(), "no recorded kernel line of {event}");
        let lab = ours
            .get(*event)
            .unwrap_or_else(|| panic!("labfs printed no {event} line:\n{labfs}"));
        for k in &kernel {
            let (_, k_cols, k_words) = layout(k);
            for l in lab {
                let (_, l_cols, l_words) = layout(l);
                assert_eq!(k_cols, l_cols, "columns differ:\nkernel {k}\nlabfs  {l}");
                assert_eq!(
                    k_words, l_words,
                    "text layout differs:\nkernel {k}\nlabfs  {l}"
                );
            }
        }
    }
}

fn trace_into(events: &str, dir: &Path) -> (fslab::trace::Session, std::path::PathBuf) {
    let out = dir.join("trace.txt");
    let session = TraceConfig {
        events: events.to_string(),
        out: Some(out.clone()),
        ..TraceConfig::default()
    }
    .start()
    .expect("trace session");
    (session, out)
}

/// The caller's symbol, without the kernel's `+0xoff/0xsize`.
fn caller_symbol(line: &str) -> &str {
    let caller = line.rsplit_once(" caller ").map_or("", |(_, c)| c);
    caller.split('+').next().unwrap_or("")
}

/// The value after `field ` in an event's text.
fn field<'a>(line: &'a str, name: &str) -> &'a str {
    let (_, text) = line.split_once(": ").expect("event");
    let (_, text) = text.split_once(": ").expect("event text");
    let mut words = text.split(' ');
    while let Some(w) = words.next() {
        if w == name {
            return words.next().unwrap_or("");
        }
    }
    panic!("no {name} in {line}")
}

/// The trace text of one 4 KiB write and fsync of a new file on a fresh labfs, with `events`
/// recorded.
fn labfs_fsync_trace(events: &str) -> String {
    let tmp = tempfile::tempdir().expect("tempdir");
    let opened = open(&BackendConfig::Lab(LabConfig::new(
        "mem:64m".parse().expect("device"),
    )))
    .expect("labfs");
    let target = opened.target();
    let (session, out) = trace_into(events, tmp.path());
    let fd = target
        .open(Path::new("/f"), OpenFlags::create_truncate(), 0o644)
        .expect("create");
    target.write(fd, &[7u8; 4096]).expect("write");
    target.fsync(fd).expect("fsync");
    target.close(fd).expect("close");
    session.finish().expect("finish");
    drop(target);
    opened.finish().expect("unmount");
    std::fs::read_to_string(out).expect("trace text")
}

#[test]
fn writeback_list_lines_from_a_labfs_fsync_have_the_kernels_layout() {
    let _serial = testing::serial();
    let text = labfs_fsync_trace("sb_mark_inode_writeback,sb_clear_inode_writeback");
    assert_same_layout(
        &text,
        &["sb_mark_inode_writeback", "sb_clear_inode_writeback"],
    );
    // The values the kernel shows for an fs_mark file written and fsynced: a regular file of
    // mode 0644 whose pages are dirty while it is under writeback.
    for event in ["sb_mark_inode_writeback", "sb_clear_inode_writeback"] {
        let line = text
            .lines()
            .find(|l| l.contains(&format!(" {event}: ")))
            .expect("line");
        assert!(line.ends_with("state I_DIRTY_PAGES mode 0100644"), "{line}");
    }
}

#[test]
fn log_force_lines_from_a_labfs_fsync_have_the_kernels_layout_and_callers() {
    let _serial = testing::serial();
    let text = labfs_fsync_trace("xfs_log_force");
    assert_same_layout(&text, &["xfs_log_force"]);
    // The kernel's fsync force is two lines with the same CIL sequence: xfs_log_force_seq's
    // (caller xfs_file_fsync), then xlog_cil_force_seq's (caller xfs_log_force_seq).
    let kernel = kernel_lines("xfs_log_force");
    let first = kernel
        .iter()
        .position(|l| caller_symbol(l) == "xfs_file_fsync")
        .expect("a recorded fsync force");
    let kernel_pair: Vec<&str> = kernel[first..first + 2]
        .iter()
        .map(|l| caller_symbol(l))
        .collect();
    assert_eq!(
        field(&kernel[first], "lsn"),
        field(&kernel[first + 1], "lsn")
    );
    let ours: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(ours.len(), 2, "one fsync, one force pair:\n{text}");
    let our_pair: Vec<&str> = ours.iter().map(|l| caller_symbol(l)).collect();
    assert_eq!(our_pair, kernel_pair, "{text}");
    assert_eq!(field(ours[0], "lsn"), field(ours[1], "lsn"), "{text}");
    assert_ne!(field(ours[0], "lsn"), "0x0", "a force by sequence: {text}");
}

#[test]
fn iclog_sync_lines_from_a_labfs_fsync_match_the_kernels() {
    let _serial = testing::serial();
    let text = labfs_fsync_trace("xlog_iclog_sync");
    assert_same_layout(&text, &["xlog_iclog_sync"]);
    // The kernel traces xlog_sync with the iclog SYNCING and its last reference dropped, from
    // xlog_state_release_iclog.
    let kernel = kernel_lines("xlog_iclog_sync");
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let ours = (
            field(line, "state"),
            field(line, "refcnt"),
            caller_symbol(line),
        );
        assert!(
            kernel
                .iter()
                .any(|k| (field(k, "state"), field(k, "refcnt"), caller_symbol(k)) == ours),
            "no kernel line has state, refcnt and caller {ours:?}: {line}"
        );
        assert_ne!(field(line, "offset"), "0", "a record with data: {line}");
    }
}

#[test]
fn syncfs_log_force_lines_match_the_kernels_pair() {
    let _serial = testing::serial();
    let tmp = tempfile::tempdir().expect("tempdir");
    let opened = open(&BackendConfig::Lab(LabConfig::new(
        "mem:64m".parse().expect("device"),
    )))
    .expect("labfs");
    let target = opened.target();
    let fd = target
        .open(Path::new("/f"), OpenFlags::create_truncate(), 0o644)
        .expect("create");
    target.close(fd).expect("close");
    let (session, out) = trace_into("xfs_log_force", tmp.path());
    target.syncfs(Path::new("/")).expect("syncfs");
    session.finish().expect("finish");
    drop(target);
    opened.finish().expect("unmount");
    let text = std::fs::read_to_string(out).expect("trace text");
    assert_same_layout(&text, &["xfs_log_force"]);
    let kernel = kernel_lines("xfs_log_force");
    let first = kernel
        .iter()
        .position(|l| caller_symbol(l) == "xfs_fs_sync_fs")
        .expect("a recorded sync force");
    let kernel_pair: Vec<&str> = kernel[first..first + 2]
        .iter()
        .map(|l| caller_symbol(l))
        .collect();
    assert_eq!(field(&kernel[first], "lsn"), "0x0");
    let ours: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    let our_pair: Vec<&str> = ours.iter().map(|l| caller_symbol(l)).collect();
    assert_eq!(our_pair, kernel_pair, "{text}");
    assert_eq!(field(ours[0], "lsn"), "0x0", "{text}");
    assert_ne!(field(ours[1], "lsn"), "0x0", "the current sequence: {text}");
}

#[test]
fn log_and_ail_lines_have_the_kernels_layout() {
    let _serial = testing::serial();
    let tmp = tempfile::tempdir().expect("tempdir");
    let (session, out) = trace_into("xfs_log_force,xlog_iclog_*,xfs_ail_*", tmp.path());
    let dev = Dev { major: 7, minor: 0 };
    events::xfs_log_force(dev, 0x2, "xfs_file_fsync");
    let flush_fua = "XLOG_ICL_NEED_FLUSH|XLOG_ICL_NEED_FUA";
    let iclog = "XLOG_STATE_SYNCING";
    events::xlog_iclog_sync(
        dev,
        iclog,
        0,
        1716,
        0x1_0000_0007,
        flush_fua,
        "xlog_state_release_iclog",
    );
    events::xlog_iclog_write(
        dev,
        iclog,
        0,
        1716,
        0x1_0000_0007,
        "",
        "xlog_state_release_iclog",
    );
    events::xlog_iclog_release(
        dev,
        "XLOG_STATE_ACTIVE",
        1,
        1704,
        0x1_0000_0007,
        "XLOG_ICL_NEED_FLUSH",
        "xlog_write",
    );
    events::xlog_iclog_activate(
        dev,
        "XLOG_STATE_DIRTY",
        0,
        1716,
        0x1_0000_0007,
        "",
        "xlog_state_do_callback",
    );
    let lip = 0xffff_8880_1234_5678;
    events::xfs_ail_insert(dev, lip, 0, 0x1_0000_0007, "XFS_LI_BUF", "IN_AIL");
    events::xfs_ail_move(
        dev,
        lip,
        0x1_0000_0002,
        0x1_0000_0007,
        "XFS_LI_INODE",
        "IN_AIL",
    );
    events::xfs_ail_delete(
        dev,
        lip,
        0x1_0000_0002,
        0x1_0000_022c,
        "XFS_LI_INODE",
        "IN_AIL",
    );
    session.finish().expect("finish");
    let text = std::fs::read_to_string(out).expect("trace text");
    assert_same_layout(
        &text,
        &[
            "xfs_log_force",
            "xlog_iclog_sync",
            "xlog_iclog_write",
            "xlog_iclog_release",
            "xlog_iclog_activate",
            "xfs_ail_insert",
            "xfs_ail_move",
            "xfs_ail_delete",
        ],
    );
}

#[test]
fn the_layout_tells_a_pointer_from_a_hex_number_and_octal_from_decimal() {
    let k = "        fsmark-0-18193   [001] .....   611.977594: xfs_ail_insert: dev 7:0 lip 000000008584c636 old lsn 0/0 new lsn 1/7 type XFS_LI_BUF flags IN_AIL";
    let with_0x = k.replace("lip 000000008584c636", "lip 0x000000008584c636");
    assert_ne!(layout(k).2, layout(&with_0x).2);
    let k = "     kworker/0:1-11      [000] d..2.   611.977586: sb_clear_inode_writeback: dev 7,0 ino 132 dirtied 4295045244 state I_DIRTY_PAGES mode 0100644";
    assert_eq!(layout(k).2, layout(&k.replace("I_DIRTY_PAGES", "")).2);
    assert_ne!(
        layout(k).2,
        layout(&k.replace("mode 0100644", "mode 33188")).2
    );
}
