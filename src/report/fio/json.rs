//! fio's JSON output (`--output-format=json` and `json+`), in fio's own layout.
//!
//! fio writes JSON with its own printer (`json.c`): two spaces per level, `"key" : value`,
//! integers as `%lld`, floats as `%f` (six decimals), strings with only `\` and `"` escaped.
//! Scripts compare these files textually as often as they parse them, so fiolike builds the
//! same tree ([`Value`]) and prints it the same way rather than using serde's layout.
//! [`document`] assembles the tree of `__show_run_stats` / `show_thread_status_json`.

use std::fmt::Write;

use super::normal::{FIO_VERSION, agg_percent, cpu_percentages, dist_percentages, lat_percentages};
use crate::workload::fio::job::Ddir;
use crate::workload::fio::stats::{
    DEFAULT_PERCENTILES, DiskUtil, GroupStats, IoStat, LatHist, ThreadStats, plat_idx_to_val,
};

/// A JSON value in fio's printer.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `%lld`.
    Int(i64),
    /// `%f`.
    Float(f64),
    /// A string (fio escapes `\` and `"` only).
    Str(String),
    /// Keys in insertion order.
    Object(Vec<(String, Value)>),
    /// Values in order.
    Array(Vec<Value>),
}

/// An object being built.
#[derive(Debug, Default)]
pub struct Obj(Vec<(String, Value)>);

impl Obj {
    /// An empty object.
    pub fn new() -> Obj {
        Obj(Vec::new())
    }
    /// Add an integer.
    pub fn int(&mut self, k: &str, v: u64) -> &mut Obj {
        self.0.push((
            k.to_string(),
            Value::Int(i64::try_from(v).unwrap_or(i64::MAX)),
        ));
        self
    }
    /// Add a signed integer.
    pub fn sint(&mut self, k: &str, v: i64) -> &mut Obj {
        self.0.push((k.to_string(), Value::Int(v)));
        self
    }
    /// Add a float.
    pub fn float(&mut self, k: &str, v: f64) -> &mut Obj {
        self.0.push((k.to_string(), Value::Float(v)));
        self
    }
    /// Add a string.
    pub fn str(&mut self, k: &str, v: &str) -> &mut Obj {
        self.0.push((k.to_string(), Value::Str(v.to_string())));
        self
    }
    /// Add any value.
    pub fn value(&mut self, k: &str, v: Value) -> &mut Obj {
        self.0.push((k.to_string(), v));
        self
    }
    /// The finished object.
    pub fn done(self) -> Value {
        Value::Object(self.0)
    }
}

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c == '\\' || c == '"' {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn indent(out: &mut String, level: usize) {
    for _ in 0..level {
        out.push_str("  ");
    }
}

/// Print a value as fio's `json_print_object` does; `level` is the value's own level.
pub fn print(out: &mut String, v: &Value, level: usize) {
    match v {
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Float(f) => {
            let _ = write!(out, "{f:.6}");
        }
        Value::Str(s) => {
            let _ = write!(out, "\"{}\"", escape(s));
        }
        Value::Object(pairs) => {
            out.push_str("{\n");
            for (i, (k, val)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                indent(out, level + 1);
                let _ = write!(out, "\"{k}\" : ");
                print(out, val, level + 1);
            }
            out.push('\n');
            indent(out, level);
            out.push('}');
        }
        Value::Array(vals) => {
            out.push_str("[\n");
            for (i, val) in vals.iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                indent(out, level + 1);
                print(out, val, level + 1);
            }
            out.push('\n');
            indent(out, level);
            out.push(']');
        }
    }
}

fn options_object(opts: &[(String, Option<String>)]) -> Option<Value> {
    // fio leaves out options given bare (their value is NULL) and lists nothing when empty.
    let mut o = Obj::new();
    for (k, v) in opts {
        if let Some(v) = v {
            o.str(k, v);
        }
    }
    (!o.0.is_empty()).then(|| o.done())
}

fn lat_object(stat: &IoStat, hist: Option<&LatHist>, plus: bool) -> Value {
    let mut o = Obj::new();
    let s = stat.summary();
    o.int("min", s.map_or(0, |s| s.min))
        .int("max", s.map_or(0, |s| s.max))
        .float("mean", s.map_or(0.0, |s| s.mean))
        .float("stddev", s.map_or(0.0, |s| s.dev))
        .int("N", stat.samples);
    if let Some(h) = hist.filter(|_| stat.samples > 0) {
        let vals = h.percentiles(&DEFAULT_PERCENTILES, stat.samples);
        let mut p = Obj::new();
        for (pct, v) in DEFAULT_PERCENTILES.iter().zip(vals) {
            p.int(&format!("{pct:.6}"), v);
        }
        o.value("percentile", p.done());
        if plus {
            let mut bins = Obj::new();
            for (idx, count) in h.fio_buckets() {
                bins.int(&plat_idx_to_val(idx).to_string(), count);
            }
            o.value("bins", bins.done());
        }
    }
    o.done()
}

fn ddir_object(ts: &ThreadStats, rs: &GroupStats, ddir: Ddir, plus: bool) -> Value {
    let d = ts.d(ddir);
    let bw_bytes = (1000 * d.io_bytes).checked_div(d.runtime_ms).unwrap_or(0);
    let iops = if d.runtime_ms > 0 {
        1000.0 * d.total_ios as f64 / d.runtime_ms as f64
    } else {
        0.0
    };
    let mut o = Obj::new();
    o.int("io_bytes", d.io_bytes)
        .int("io_kbytes", d.io_bytes >> 10)
        .int("bw_bytes", bw_bytes)
        .int("bw", bw_bytes / 1024)
        .float("iops", iops)
        .int("runtime", d.runtime_ms)
        .int("total_ios", d.total_ios)
        .int("short_ios", d.short_ios)
        .int("drop_ios", d.drop_ios)
        .value("slat_ns", lat_object(&d.slat, None, plus))
        .value("clat_ns", lat_object(&d.clat, Some(&d.clat_hist), plus))
        .value("lat_ns", lat_object(&d.lat, None, plus));
    let bw = d.bw.summary();
    let p_of_agg = bw.map_or(0.0, |s| agg_percent(rs, ddir, s.mean as i64 as f64));
    o.int("bw_min", bw.map_or(0, |s| s.min))
        .int("bw_max", bw.map_or(0, |s| s.max))
        .float("bw_agg", p_of_agg)
        .float("bw_mean", bw.map_or(0.0, |s| s.mean))
        .float("bw_dev", bw.map_or(0.0, |s| s.dev))
        .int("bw_samples", d.bw.samples);
    let iops_s = d.iops.summary();
    o.int("iops_min", iops_s.map_or(0, |s| s.min))
        .int("iops_max", iops_s.map_or(0, |s| s.max))
        .float("iops_mean", iops_s.map_or(0.0, |s| s.mean))
        .float("iops_stddev", iops_s.map_or(0.0, |s| s.dev))
        .int("iops_samples", d.iops.samples);
    o.done()
}

fn keyed_floats(keys: &[&str], vals: &[f64]) -> Value {
    let mut o = Obj::new();
    for (k, v) in keys.iter().zip(vals) {
        o.float(k, *v);
    }
    o.done()
}

/// Run-time facts the JSON carries besides the statistics.
#[derive(Debug, Clone, Copy)]
pub struct JsonClock {
    /// Seconds since the epoch at report time.
    pub now_secs: i64,
    /// Milliseconds since the epoch at report time.
    pub now_ms: i64,
    /// Seconds the run took ("elapsed").
    pub elapsed_secs: u64,
}

/// One job's object (`show_thread_status_json`).
pub fn job_object(ts: &ThreadStats, rs: &GroupStats, clock: &JsonClock, plus: bool) -> Value {
    let mut o = Obj::new();
    o.str("jobname", &ts.name)
        .int("groupid", u64::from(ts.groupid))
        .sint("error", i64::from(ts.error))
        .int("eta", 2_147_483_647)
        .int("elapsed", clock.elapsed_secs);
    if let Some(opts) = options_object(&ts.job_options) {
        o.value("job options", opts);
    }
    for ddir in Ddir::ALL {
        o.value(ddir.name(), ddir_object(ts, rs, ddir, plus));
    }
    let mut sync = Obj::new();
    sync.int("total_ios", ts.sync_total)
        .value("lat_ns", lat_object(&ts.sync, Some(&ts.sync_hist), plus));
    o.value("sync", sync.done());
    let (usr, sys) = cpu_percentages(ts);
    o.int("job_runtime", ts.total_run_time_ms)
        .float("usr_cpu", usr)
        .float("sys_cpu", sys)
        .int("ctx", ts.ctx)
        .int("majf", ts.majf)
        .int("minf", ts.minf);
    let total = ts.total_rw_ios();
    o.value(
        "iodepth_level",
        keyed_floats(
            &["1", "2", "4", "8", "16", "32", ">=64"],
            &dist_percentages(&ts.io_u_map, total),
        ),
    );
    let batch_keys = ["0", "4", "8", "16", "32", "64", ">=64"];
    o.value(
        "iodepth_submit",
        keyed_floats(
            &batch_keys,
            &dist_percentages(&ts.io_u_submit, ts.total_submit),
        ),
    );
    o.value(
        "iodepth_complete",
        keyed_floats(
            &batch_keys,
            &dist_percentages(&ts.io_u_complete, ts.total_complete),
        ),
    );
    let keys = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
    ];
    o.value(
        "latency_ns",
        keyed_floats(&keys[..10], &lat_percentages(&ts.lat_n, total)),
    );
    o.value(
        "latency_us",
        keyed_floats(&keys[..10], &lat_percentages(&ts.lat_u, total)),
    );
    o.value(
        "latency_ms",
        keyed_floats(&keys, &lat_percentages(&ts.lat_m, total)),
    );
    if ts.latency_depth > 0 {
        o.int("latency_depth", u64::from(ts.latency_depth))
            .int("latency_target", 0)
            .float("latency_percentile", 100.0)
            .int("latency_window", 0);
    }
    if let Some(desc) = &ts.description {
        o.str("desc", desc);
    }
    o.done()
}

fn disk_object(d: &DiskUtil) -> Value {
    let mut o = Obj::new();
    o.str("name", &d.name)
        .int("read_ios", d.ios[0])
        .int("write_ios", d.ios[1])
        .int("read_merges", d.merges[0])
        .int("write_merges", d.merges[1])
        .int("read_ticks", d.ticks[0])
        .int("write_ticks", d.ticks[1])
        .int("in_queue", d.in_queue)
        .float("util", d.util());
    o.done()
}

/// The whole document, printed, with its final newline.
pub fn document(
    reports: &[ThreadStats],
    groups: &[GroupStats],
    global_options: &[(String, Option<String>)],
    disks: &[DiskUtil],
    clock: &JsonClock,
    plus: bool,
) -> String {
    let mut root = Obj::new();
    root.str("fio version", FIO_VERSION)
        .sint("timestamp", clock.now_secs)
        .sint("timestamp_ms", clock.now_ms)
        .str("time", super::ctime(clock.now_secs).trim_end());
    if let Some(g) = options_object(global_options) {
        root.value("global options", g);
    }
    let jobs: Vec<Value> = reports
        .iter()
        .filter_map(|ts| {
            groups
                .get(ts.groupid as usize)
                .map(|rs| job_object(ts, rs, clock, plus))
        })
        .collect();
    root.value("jobs", Value::Array(jobs));
    if !disks.is_empty() {
        root.value(
            "disk_util",
            Value::Array(disks.iter().map(disk_object).collect()),
        );
    }
    let mut out = String::new();
    print(&mut out, &root.done(), 0);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printer_matches_fios_layout() {
        let mut inner = Obj::new();
        inner.int("min", 0).float("mean", 0.0);
        let mut root = Obj::new();
        root.str("fio version", "fio-3.33")
            .value("jobs", Value::Array(vec![inner.done()]))
            .str("q", "a\"b\\c");
        let mut out = String::new();
        print(&mut out, &root.done(), 0);
        assert_eq!(
            out,
            "{\n  \"fio version\" : \"fio-3.33\",\n  \"jobs\" : [\n    {\n      \"min\" : 0,\n      \"mean\" : 0.000000\n    }\n  ],\n  \"q\" : \"a\\\"b\\\\c\"\n}"
        );
    }

    #[test]
    fn bare_options_are_left_out_like_fio() {
        let o = options_object(&[
            ("name".into(), Some("x".into())),
            ("time_based".into(), None),
        ])
        .unwrap();
        assert_eq!(
            o,
            Value::Object(vec![("name".into(), Value::Str("x".into()))])
        );
        assert!(options_object(&[]).is_none());
    }
}
