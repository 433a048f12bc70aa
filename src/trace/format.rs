//! Turning records into the text people read: the event's own print format, the ftrace text
//! layout of `/sys/kernel/tracing/trace`, and JSON lines.
//!
//! The ftrace layout (`kernel/trace/trace_output.c`, `Documentation/trace/ftrace.rst`) is a
//! fixed 12-line header, the third line carrying `entries-in-buffer/entries-written` and `#P:`
//! (online CPUs), then one line per event:
//! `%16s-%-7d [%03d] ..... %5lu.%06lu: name: fields` (task right-aligned in 16, pid
//! left-aligned in 7, CPU in 3 digits, five flag characters, seconds and microseconds). The
//! flags are always `.....`: userspace has no irq, softirq, preempt or migrate state to show.
//!
//! A JSON line is `{"ts":S.NNNNNNNNN,"task":..,"pid":..,"cpu":..,"event":..,"fields":{..}}`
//! with `ts` in seconds of the same clock (nanosecond digits), and typed fields: integers as
//! numbers, strings as strings, a device as `{"major":M,"minor":m}`.

use std::fmt::Write as _;

use super::ring::{Record, TaskInfo};
use super::schema::{EventDef, Value};

/// The lines of the ftrace header after the entries line (flag legend and column titles).
const FTRACE_LEGEND: &str = "\
#
#                                _-----=> irqs-off/BH-disabled
#                               / _----=> need-resched
#                              | / _---=> hardirq/softirq
#                              || / _--=> preempt-depth
#                              ||| / _-=> migrate-disable
#                              |||| /     delay
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |   |||||     |         |
";

/// Append the event's fields rendered through its print template.
pub(crate) fn push_fields(out: &mut String, event: &EventDef, values: &[Value]) {
    let mut rest = event.format();
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            // `check_format` (tested for every event) rules this out; print what is left.
            out.push_str(&rest[open..]);
            return;
        };
        let field_ref = &after[..close];
        let (name, spec) = field_ref.split_once(':').unwrap_or((field_ref, ""));
        match event.field_index(name).and_then(|i| values.get(i)) {
            Some(v) => push_value(out, *v, spec),
            None => {
                out.push('{');
                out.push_str(field_ref);
                out.push('}');
            }
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
}

fn push_value(out: &mut String, v: Value, spec: &str) {
    // Writing into a String cannot fail; the results are ignored for that reason.
    let _ = match (v, spec) {
        (Value::Dev(d), "comma") => write!(out, "{},{}", d.major, d.minor),
        (Value::U64(n), "x") => write!(out, "{n:x}"),
        (Value::U64(n), "o") => write!(out, "{n:o}"),
        // `%p`: the kernel prints a (hashed) pointer as 16 hex digits, no `0x`.
        (Value::U64(n), "p") => write!(out, "{n:016x}"),
        // XFS's CYCLE_LSN / BLOCK_LSN halves, printed with %d.
        (Value::U64(n), "lsn") => write!(out, "{}/{}", (n >> 32) as u32 as i32, n as u32 as i32),
        (v, _) => write!(out, "{v}"),
    };
}

/// Append the ftrace header.
pub(crate) fn push_ftrace_header(out: &mut String, in_buffer: u64, written: u64, cpus: u32) {
    out.push_str("# tracer: nop\n#\n");
    let _ = writeln!(
        out,
        "# entries-in-buffer/entries-written: {in_buffer}/{written}   #P:{cpus}"
    );
    out.push_str(FTRACE_LEGEND);
}

/// Append one ftrace event line.
pub(crate) fn push_ftrace_line(out: &mut String, task: &TaskInfo, rec: &Record) {
    let secs = rec.ts_ns / 1_000_000_000;
    let usecs = (rec.ts_ns % 1_000_000_000) / 1_000;
    let _ = write!(
        out,
        "{:>16}-{:<7} [{:03}] ..... {:>5}.{:06}: {}: ",
        task.comm,
        task.tid,
        rec.cpu,
        secs,
        usecs,
        rec.event.name()
    );
    push_fields(out, rec.event, rec.fields());
    out.push('\n');
}

/// Append one JSON line.
pub(crate) fn push_json_line(out: &mut String, task: &TaskInfo, rec: &Record) {
    let secs = rec.ts_ns / 1_000_000_000;
    let nanos = rec.ts_ns % 1_000_000_000;
    let _ = write!(out, "{{\"ts\":{secs}.{nanos:09},\"task\":");
    push_json_str(out, &task.comm);
    let _ = write!(out, ",\"pid\":{},\"cpu\":{},\"event\":", task.tid, rec.cpu);
    push_json_str(out, rec.event.name());
    out.push_str(",\"fields\":{");
    for (i, (field, value)) in rec.event.fields().iter().zip(rec.fields()).enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_json_str(out, field.name);
        out.push(':');
        let _ = match value {
            Value::Dev(d) => write!(out, "{{\"major\":{},\"minor\":{}}}", d.major, d.minor),
            Value::Str(s) => {
                push_json_str(out, s);
                Ok(())
            }
            Value::U64(n) => write!(out, "{n}"),
            Value::I64(n) => write!(out, "{n}"),
        };
    }
    out.push_str("}}\n");
}

/// Append `s` as a JSON string literal.
///
/// Written here rather than through `serde_json` because its writer API returns a `Result`
/// that cannot be `Err` for a `&str` into a `String`, and this path must not invent an error
/// branch.
fn push_json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Dev;
    use crate::trace::registry::find;
    use crate::trace::schema::MAX_FIELDS;

    fn record(name: &str, given: &[Value], ts_ns: u64, cpu: u32) -> Record {
        let event = find(name).expect("declared event");
        let mut values = [Value::EMPTY; MAX_FIELDS];
        values[..given.len()].copy_from_slice(given);
        Record {
            ts_ns,
            cpu,
            event,
            values,
        }
    }

    fn render_fields(event: &EventDef, values: &[Value]) -> String {
        let mut s = String::new();
        push_fields(&mut s, event, values);
        s
    }

    const LOOP: Dev = Dev { major: 7, minor: 0 };

    #[test]
    fn log_force_prints_hex_lsn_and_caller() {
        let r = record(
            "xfs_log_force",
            &[LOOP.into(), 0x1au64.into(), "xfs_file_fsync".into()],
            0,
            0,
        );
        assert_eq!(
            render_fields(r.event, r.fields()),
            "dev 7:0 lsn 0x1a caller xfs_file_fsync"
        );
    }

    #[test]
    fn ail_events_print_pointer_and_cycle_block_lsns() {
        let lsn = (1u64 << 32) | 4096;
        let r = record(
            "xfs_ail_push",
            &[
                LOOP.into(),
                0xffff_8880_1234_5678u64.into(),
                lsn.into(),
                "XFS_LI_INODE".into(),
                "IN_AIL".into(),
            ],
            0,
            0,
        );
        assert_eq!(
            render_fields(r.event, r.fields()),
            "dev 7:0 lip ffff888012345678 lsn 1/4096 type XFS_LI_INODE flags IN_AIL"
        );
        let r = record(
            "xfs_ail_move",
            &[
                Dev {
                    major: 253,
                    minor: 1,
                }
                .into(),
                0x40u64.into(),
                lsn.into(),
                ((2u64 << 32) | 8).into(),
                "XFS_LI_BUF".into(),
                "IN_AIL|DIRTY".into(),
            ],
            0,
            0,
        );
        assert_eq!(
            render_fields(r.event, r.fields()),
            "dev 253:1 lip 0000000000000040 old lsn 1/4096 new lsn 2/8 type XFS_LI_BUF \
             flags IN_AIL|DIRTY"
        );
    }

    #[test]
    fn writeback_prints_comma_dev_and_octal_mode() {
        let r = record(
            "sb_mark_inode_writeback",
            &[
                LOOP.into(),
                131u64.into(),
                4_294_892_296u64.into(),
                "I_DIRTY_PAGES".into(),
                0o100644u32.into(),
            ],
            0,
            0,
        );
        assert_eq!(
            render_fields(r.event, r.fields()),
            "dev 7,0 ino 131 dirtied 4294892296 state I_DIRTY_PAGES mode 0100644"
        );
    }

    #[test]
    fn iclog_and_crc_events_print_every_field() {
        let r = record(
            "xlog_iclog_sync",
            &[
                LOOP.into(),
                "XLOG_STATE_WANT_SYNC".into(),
                (-1i32).into(),
                32768u32.into(),
                0x1_0000_0200u64.into(),
                "XLOG_ICL_NEED_FLUSH|XLOG_ICL_NEED_FUA".into(),
                "xlog_state_release_iclog".into(),
            ],
            0,
            0,
        );
        assert_eq!(
            render_fields(r.event, r.fields()),
            "dev 7:0 state XLOG_STATE_WANT_SYNC refcnt -1 offset 32768 lsn 0x100000200 \
             flags XLOG_ICL_NEED_FLUSH|XLOG_ICL_NEED_FUA caller xlog_state_release_iclog"
        );
        let r = record(
            "crc32c",
            &[
                "inode".into(),
                512u32.into(),
                100u32.into(),
                408u32.into(),
                "split".into(),
                "crc32c".into(),
            ],
            0,
            0,
        );
        assert_eq!(
            render_fields(r.event, r.fields()),
            "site inode len 512 head 100 tail 408 mode split engine crc32c"
        );
    }

    #[test]
    fn ftrace_header_matches_the_kernel_layout() {
        let mut s = String::new();
        push_ftrace_header(&mut s, 13, 20, 12);
        let expected = "\
# tracer: nop
#
# entries-in-buffer/entries-written: 13/20   #P:12
#
#                                _-----=> irqs-off/BH-disabled
#                               / _----=> need-resched
#                              | / _---=> hardirq/softirq
#                              || / _--=> preempt-depth
#                              ||| / _-=> migrate-disable
#                              |||| /     delay
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |   |||||     |         |
";
        assert_eq!(s, expected);
    }

    #[test]
    fn ftrace_line_pads_task_pid_cpu_and_time_like_the_kernel() {
        let task = TaskInfo {
            comm: "fsmark".into(),
            tid: 203,
        };
        let r = record(
            "xfs_log_force",
            &[LOOP.into(), 0u64.into(), "xfs_fs_sync_fs".into()],
            938_668_123,
            3,
        );
        let mut s = String::new();
        push_ftrace_line(&mut s, &task, &r);
        assert_eq!(
            s,
            "          fsmark-203     [003] .....     0.938668: xfs_log_force: \
             dev 7:0 lsn 0x0 caller xfs_fs_sync_fs\n"
        );
        // Long times widen the seconds column instead of truncating.
        let r = record(
            "xfs_log_force",
            &[LOOP.into(), 0u64.into(), "x".into()],
            123_456_000_001_000,
            0,
        );
        let mut s = String::new();
        push_ftrace_line(&mut s, &task, &r);
        assert!(
            s.contains("[000] ..... 123456.000001: xfs_log_force:"),
            "{s}"
        );
    }

    #[test]
    fn json_line_has_typed_fields_and_escaped_strings() {
        let task = TaskInfo {
            comm: "we\"ird\\n".into(),
            tid: 42,
        };
        let r = record(
            "sb_clear_inode_writeback",
            &[
                LOOP.into(),
                131u64.into(),
                7u64.into(),
                "I_SYNC".into(),
                0o40755u32.into(),
            ],
            5_000_000_007,
            1,
        );
        let mut s = String::new();
        push_json_line(&mut s, &task, &r);
        assert_eq!(
            s,
            "{\"ts\":5.000000007,\"task\":\"we\\\"ird\\\\n\",\"pid\":42,\"cpu\":1,\
             \"event\":\"sb_clear_inode_writeback\",\"fields\":{\"dev\":{\"major\":7,\
             \"minor\":0},\"ino\":131,\"dirtied_when\":7,\"state\":\"I_SYNC\",\
             \"mode\":16877}}\n"
        );
        let v: serde_json::Value = serde_json::from_str(&s).expect("valid JSON");
        assert_eq!(v["task"], "we\"ird\\n");
        assert_eq!(v["fields"]["mode"], 0o40755);
        let mut ctl = String::new();
        push_json_str(&mut ctl, "a\u{1}b\tc");
        assert_eq!(ctl, "\"a\\u0001b\\tc\"");
    }
}
