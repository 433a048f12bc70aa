//! Output layers: what users read and parse.
//!
//! General pieces that every tool can use live at this level; each tool's own text format is a
//! small module of its own, so the formats people already parse (fs_mark's table, fio's
//! reports) stay byte-exact while the shared machinery evolves.
//!
//! - [`progress`]: a progress bar on stderr that appears only on a terminal and only for long
//!   phases, so pipes and tests never see it.
//! - [`json`]: writing a JSON document to a file atomically (rewritten as a run goes, so a
//!   crash loses little).
//! - [`output`]: output files named on the command line, created before the run starts.
//! - [`svg`]: what the SVG plots share (their error).
//! - [`latency`]: percentiles of an `hdrhistogram` and a comfy-table rendering of them.
//! - [`fio`]: fio 3.33's normal, JSON, json+ and terse reports and its per-job logs.
//! - [`fsmark`]: fs_mark 3.3's header, table rows, summary and log file, plus fsmark's JSON.
//! - [`syncbench`]: the sync sweep's table, JSON, CSV and SVG plots.
//! - [`csum`]: csumhist's size tables, comparisons, engine tables, JSON and SVG plot.

pub mod csum;
pub mod fio;
pub mod fsmark;
pub mod json;
pub mod latency;
pub mod output;
pub mod progress;
pub mod svg;
pub mod syncbench;

/// `ctime(3)` of `secs` in the local time zone: `"Mon Nov 30 06:35:36 2026\n"`.
pub fn ctime(secs: u64) -> String {
    let t = secs as libc::time_t;
    // SAFETY: an all-zero `tm` is a valid value of this plain C struct.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are valid for the call; localtime_r is thread-safe.
    let ok = !unsafe { libc::localtime_r(&t, &mut tm) }.is_null();
    if !ok {
        return format!("{secs}\n");
    }
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{} {}{:3} {:02}:{:02}:{:02} {}\n",
        DAYS[tm.tm_wday.rem_euclid(7) as usize],
        MONTHS[tm.tm_mon.rem_euclid(12) as usize],
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        i64::from(tm.tm_year) + 1900
    )
}
