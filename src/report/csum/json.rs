//! csumhist's JSON documents.
//!
//! `csumhist run --json`: the workload, the engine's instruction path, and per checksum mode
//! the crc32c call counts, the bucket table (counts, bytes and both percentages per column)
//! and the per-structure breakdown. `csumhist bench --json`: `{"rows": [{"size": ..,
//! "crc32c_gbps": .., "fast_gbps": .., "soft_gbps": .., ...}], "breakeven": ..}` plus the
//! engine paths and per-byte CPU counters (`null` where the machine has no such counter).
//! `*_gbps` are per second of the bench's timebase (`"timebase": "cpu"` when task-clock
//! exists, else `"wall"`); `*_wall_gbps` always per wall-clock second. `breakeven` is where
//! `fast` stays at least as fast as `crc32c` (`null`: it never does); `breakevens` lists
//! every pair that has one.
//! Byte counts are JSON integers; sizes a histogram cannot pin exactly are `{"mean": x}`.

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::{RunView, mode_stats};
use crate::fs::cksum::{CrcEngine, EnginePath};
use crate::workload::csum::bench::{BenchReport, Timebase};
use crate::workload::csum::calls::{SeedRow, SiteSummary, SizeDesc};
use crate::workload::csum::counters::{CounterKind, Reading};

/// An engine's instruction path.
#[derive(Debug, Serialize)]
struct PathJson {
    engine: &'static str,
    path: String,
    fallback: Option<String>,
}

impl From<&EnginePath> for PathJson {
    fn from(p: &EnginePath) -> Self {
        PathJson {
            engine: p.engine.name(),
            path: p.path.clone(),
            fallback: p.fallback.clone(),
        }
    }
}

/// Total, head and tail of one figure.
#[derive(Debug, Serialize)]
struct Columns<T> {
    total: T,
    head: T,
    tail: T,
}

impl<T: Copy> From<[T; 3]> for Columns<T> {
    fn from(v: [T; 3]) -> Self {
        Columns {
            total: v[0],
            head: v[1],
            tail: v[2],
        }
    }
}

#[derive(Debug, Serialize)]
struct BucketJson {
    ilog2: Option<u32>,
    lo: u64,
    hi: u64,
    calls: Columns<u64>,
    bytes: Columns<u64>,
    freq_pct: Columns<f64>,
    bytes_pct: Columns<f64>,
}

fn clamp(v: u128) -> u64 {
    u64::try_from(v).unwrap_or(u64::MAX)
}

impl From<&SeedRow> for BucketJson {
    fn from(r: &SeedRow) -> Self {
        BucketJson {
            ilog2: r.ilog2,
            lo: r.lo,
            hi: clamp(r.hi),
            calls: r.counts.into(),
            bytes: r.bytes.map(clamp).into(),
            freq_pct: r.freq_pct.into(),
            bytes_pct: r.bytes_pct.into(),
        }
    }
}

fn size_json(s: SizeDesc) -> Value {
    match s {
        SizeDesc::Exact(v) => json!(v),
        SizeDesc::Mean(m) => json!({ "mean": m }),
        SizeDesc::None => Value::Null,
    }
}

#[derive(Debug, Serialize)]
struct SiteJson {
    site: String,
    structure: &'static str,
    calls: u64,
    bytes: u64,
    crc32c_calls: u64,
    len: Value,
    heads: Vec<u64>,
    tail: Value,
    verifies: u64,
}

impl From<&SiteSummary> for SiteJson {
    fn from(s: &SiteSummary) -> Self {
        SiteJson {
            site: s.site.clone(),
            structure: s.structure,
            calls: s.calls,
            bytes: clamp(s.bytes),
            crc32c_calls: s.crc_calls,
            len: size_json(s.len),
            heads: s.heads.clone(),
            tail: size_json(s.tail),
            verifies: s.verifies,
        }
    }
}

#[derive(Debug, Serialize)]
struct ModeJson {
    cksum: &'static str,
    elapsed_s: f64,
    summary: String,
    interrupted: bool,
    checksums: u64,
    crc32c_calls: u64,
    crc32c_calls_per_s: f64,
    bytes: u64,
    small_calls: u64,
    small_bytes: u64,
    buckets: Vec<BucketJson>,
    sites: Vec<SiteJson>,
}

#[derive(Debug, Serialize)]
struct RunJson {
    workload: String,
    backend: String,
    engine: PathJson,
    calls: &'static str,
    small_below: u64,
    runs: Vec<ModeJson>,
}

/// The `csumhist run --json` document.
pub fn run_document(view: &RunView<'_>) -> Value {
    let runs = view
        .runs
        .iter()
        .map(|m| {
            let s = mode_stats(view, m);
            ModeJson {
                cksum: m.mode.name(),
                elapsed_s: m.workload.elapsed.as_secs_f64(),
                summary: m.workload.summary.clone(),
                interrupted: m.workload.interrupted,
                checksums: s.calls.helper_calls,
                crc32c_calls: s.calls.crc_calls,
                crc32c_calls_per_s: s.calls_per_sec,
                bytes: clamp(s.calls.bytes),
                small_calls: s.calls.small_calls,
                small_bytes: clamp(s.calls.small_bytes),
                buckets: m
                    .calls
                    .seed_rows(view.filter)
                    .iter()
                    .map(Into::into)
                    .collect(),
                sites: m.calls.sites(view.filter).iter().map(Into::into).collect(),
            }
        })
        .collect();
    let first = view.runs.first();
    let doc = RunJson {
        workload: view.workload.to_string(),
        backend: first.map(|m| m.backend.clone()).unwrap_or_default(),
        engine: (&first.map_or(CrcEngine::default(), |m| m.engine).path()).into(),
        calls: view.filter.name(),
        small_below: view.small_below.bytes(),
        runs,
    };
    serde_json::to_value(doc).unwrap_or(Value::Null)
}

fn reading_json(r: Reading) -> Value {
    r.value().map_or(Value::Null, |v| json!(v))
}

/// The `csumhist bench --json` document; `breakeven` is where the second engine of the report
/// (`fast`) stays at least as fast as the first (`crc32c`).
pub fn bench_document(r: &BenchReport) -> Value {
    let engines: Vec<CrcEngine> = r.paths.iter().map(|p| p.engine).collect();
    let rows: Vec<Value> = r
        .rows
        .iter()
        .map(|row| {
            let mut m = Map::new();
            m.insert("size".into(), json!(row.size.bytes));
            m.insert("structure".into(), json!(row.size.label));
            for res in &row.results {
                let e = res.engine.name();
                m.insert(format!("{e}_gbps"), json!(res.gbps));
                m.insert(format!("{e}_wall_gbps"), json!(res.wall_gbps));
                m.insert(format!("{e}_ns_per_call"), json!(res.ns_per_call));
                for k in CounterKind::ALL {
                    let key = match k {
                        CounterKind::Cycles => "cycles_per_byte",
                        CounterKind::Instructions => "instructions_per_byte",
                        CounterKind::TaskClock => "task_clock_ns_per_byte",
                    };
                    m.insert(format!("{e}_{key}"), reading_json(res.per_byte.get(k)));
                }
            }
            Value::Object(m)
        })
        .collect();
    let pair = (engines.first().copied(), engines.get(1).copied());
    let breakeven = match pair {
        (Some(a), Some(b)) => r.breakeven(a, b),
        _ => None,
    };
    json!({
        "rows": rows,
        "breakeven": breakeven,
        "breakeven_engines": pair.0.zip(pair.1).map(|(a, b)| [a.name(), b.name()]),
        "breakevens": r
            .breakevens()
            .iter()
            .map(|(a, b, size)| json!({"incumbent": a.name(), "challenger": b.name(), "size": size}))
            .collect::<Vec<_>>(),
        "timebase": match r.timebase {
            Timebase::CpuTime => "cpu",
            Timebase::WallTime => "wall",
        },
        "cpu": r.cpu.summary(),
        "engines": r.paths.iter().map(PathJson::from).collect::<Vec<_>>(),
        "crc_fast_target": r.crc_fast_target,
        "unsupported_counters": r.unsupported.iter().map(|f| f.kind.name()).collect::<Vec<_>>(),
    })
}
