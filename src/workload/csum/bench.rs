//! Throughput of each CRC engine by buffer size, and where the vectorised one starts to win.
//!
//! Thread 004's whole argument rests on one curve: a vectorised crc32c has a start-up cost, so
//! below some size (POWER8: 512 + 16 bytes; x86-64: somewhere around 2^9-2^10) the simple code
//! is faster, and splitting a 512-byte inode checksum into 100 + 4 + 408 bytes pushes every
//! piece below it. This module measures that curve for labfs's three engines on the running
//! machine: every power of two from 8 bytes to 1 MiB plus the exact sizes of the structures
//! and pieces labfs checksums ([`default_sizes`]), GB/s per engine, and the breakeven size
//! from which one engine stays at least as fast as another ([`BenchReport::breakeven`]).
//!
//! # How a figure is taken
//!
//! One buffer of random bytes (the largest size) is checksummed from its start, so every
//! engine sees the same cached bytes. For each size, the number of calls per measurement is
//! calibrated so that one measurement takes about [`BenchConfig::target_time`]; then each
//! engine is measured [`BenchConfig::rounds`] times, engines interleaved within a round so
//! that frequency changes and noisy neighbours hit them alike, and the fastest round counts
//! (the one least disturbed; the machine is shared). CPU counters ([`super::counters`]) run
//! around each measurement, and the fastest round's readings are reported per byte.
//!
//! Time is the thread's CPU time (the `task-clock` counter) where the machine has it, wall
//! time otherwise ([`Timebase`]): on a machine shared with other work, a measurement
//! preempted halfway would otherwise read as a slow engine. Both are kept.
//!
//! Engines are called exactly as labfs calls them ([`CrcEngine::checksum`]), dispatch
//! included, because that is the cost a metadata update pays.

use std::hint::black_box;
use std::time::{Duration, Instant};

use super::counters::{CounterKind, CpuCounters, OpenFailure, Readings};
use crate::fs::cksum::{CpuFeatures, CrcEngine, EnginePath};
use crate::rng::SplitMix64;

/// One buffer size to measure, with what it is when it is a structure's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BenchSize {
    /// Bytes per call.
    pub bytes: usize,
    /// The structure or piece of this size, if any.
    pub label: Option<&'static str>,
}

/// Sizes labfs checksums, with what they are: the structures and CRC offsets of
/// `docs/format.md`, and the journal's pieces as XFS lays them out (a 328-byte record header
/// with its CRC at 32, 260-byte extended headers, iclogs of `logbsize` bytes).
pub const STRUCTURE_SIZES: [(usize, &str); 14] = [
    (4, "dir data/free block head"),
    (12, "dir leaf/node block head"),
    (32, "log record header head"),
    (52, "short btree block head"),
    (100, "inode head"),
    (216, "AGF head"),
    (260, "log extended header"),
    (292, "log record header tail"),
    (328, "log record header"),
    (408, "inode tail"),
    (512, "inode; sector (sb, AGF, AGI)"),
    (4088, "dir data block tail"),
    (4096, "block (dir, btree)"),
    (32768, "iclog (logbsize 32k)"),
];

/// Smallest and largest power of two measured.
pub const POWERS: (usize, usize) = (8, 1 << 20);

/// Every power of two from 8 bytes to 1 MiB, plus [`STRUCTURE_SIZES`], ascending; a power of
/// two that is also a structure size carries its label.
pub fn default_sizes() -> Vec<BenchSize> {
    let mut sizes: Vec<BenchSize> = STRUCTURE_SIZES
        .iter()
        .map(|&(bytes, label)| BenchSize {
            bytes,
            label: Some(label),
        })
        .collect();
    let mut p = POWERS.0;
    while p <= POWERS.1 {
        if !sizes.iter().any(|s| s.bytes == p) {
            sizes.push(BenchSize {
                bytes: p,
                label: None,
            });
        }
        p *= 2;
    }
    sizes.sort_by_key(|s| s.bytes);
    sizes
}

/// What to measure and how long.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchConfig {
    /// Sizes, ascending.
    pub sizes: Vec<BenchSize>,
    /// Engines, in report order.
    pub engines: Vec<CrcEngine>,
    /// About how long one measurement (one engine, one size, one round) runs.
    pub target_time: Duration,
    /// Measurements per engine and size; the fastest counts.
    pub rounds: u32,
}

impl Default for BenchConfig {
    fn default() -> Self {
        BenchConfig {
            sizes: default_sizes(),
            engines: CrcEngine::ALL.to_vec(),
            target_time: Duration::from_millis(10),
            rounds: 5,
        }
    }
}

/// What a bench's times are measured in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timebase {
    /// The thread's CPU time (task-clock): immune to preemption by other work.
    CpuTime,
    /// Wall-clock time (the machine has no task-clock counter).
    WallTime,
}

impl Timebase {
    /// How reports name it.
    pub fn name(self) -> &'static str {
        match self {
            Timebase::CpuTime => "cpu time (task-clock)",
            Timebase::WallTime => "wall time",
        }
    }
}

/// One engine at one size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EngineResult {
    /// The engine.
    pub engine: CrcEngine,
    /// Throughput in 10^9 bytes per second of the bench's [`Timebase`].
    pub gbps: f64,
    /// Throughput in 10^9 bytes per wall-clock second (the same round).
    pub wall_gbps: f64,
    /// Nanoseconds per call, in the bench's timebase.
    pub ns_per_call: f64,
    /// CPU counters per byte over the fastest round.
    pub per_byte: Readings,
}

/// Every engine at one size.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchRow {
    /// The size.
    pub size: BenchSize,
    /// One result per engine, in the config's order.
    pub results: Vec<EngineResult>,
}

impl BenchRow {
    /// The result of `engine`, if it was measured.
    pub fn result(&self, engine: CrcEngine) -> Option<&EngineResult> {
        self.results.iter().find(|r| r.engine == engine)
    }

    /// Throughput of `engine`, if it was measured.
    pub fn gbps(&self, engine: CrcEngine) -> Option<f64> {
        self.result(engine).map(|r| r.gbps)
    }
}

/// A finished bench.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchReport {
    /// The CPU's CRC features.
    pub cpu: CpuFeatures,
    /// Each engine's instruction path on this CPU.
    pub paths: Vec<EnginePath>,
    /// crc-fast's own name for its code path.
    pub crc_fast_target: String,
    /// Counters the machine could not open (printed `<not supported>`).
    pub unsupported: Vec<OpenFailure>,
    /// What the times are measured in.
    pub timebase: Timebase,
    /// One row per size, ascending.
    pub rows: Vec<BenchRow>,
}

impl BenchReport {
    /// The smallest measured size from which `challenger` is at least as fast as `incumbent`
    /// at that size and at every larger one; `None` if it is slower at the largest size.
    pub fn breakeven(&self, incumbent: CrcEngine, challenger: CrcEngine) -> Option<usize> {
        let mut from = None;
        for row in self.rows.iter().rev() {
            match (row.gbps(incumbent), row.gbps(challenger)) {
                (Some(a), Some(b)) if b >= a => from = Some(row.size.bytes),
                _ => break,
            }
        }
        from
    }

    /// Every ordered pair of measured engines whose challenger takes over at some size:
    /// `(incumbent, challenger, size)`, in engine order.
    pub fn breakevens(&self) -> Vec<(CrcEngine, CrcEngine, usize)> {
        let engines: Vec<CrcEngine> = self.paths.iter().map(|p| p.engine).collect();
        let mut out = Vec::new();
        for &a in &engines {
            for &b in &engines {
                if a != b
                    && let Some(size) = self.breakeven(a, b)
                {
                    out.push((a, b, size));
                }
            }
        }
        out
    }

    /// `challenger`'s throughput over `incumbent`'s at exactly `bytes`, if both were measured.
    pub fn ratio_at(
        &self,
        bytes: usize,
        incumbent: CrcEngine,
        challenger: CrcEngine,
    ) -> Option<f64> {
        let row = self.rows.iter().find(|r| r.size.bytes == bytes)?;
        Some(row.gbps(challenger)? / row.gbps(incumbent)?)
    }
}

/// `calls` checksums of `data` with `engine`; the time they took.
#[inline(never)]
fn timed(engine: CrcEngine, data: &[u8], calls: u64) -> Duration {
    let start = Instant::now();
    let mut acc = 0u32;
    for _ in 0..calls {
        acc ^= engine.checksum(black_box(data));
    }
    black_box(acc);
    start.elapsed()
}

/// Calls per measurement so that one takes about `target` with the slowest engine.
fn calibrate(engines: &[CrcEngine], data: &[u8], target: Duration) -> u64 {
    let probe = target / 8;
    let mut calls = 1u64;
    loop {
        let slowest = engines
            .iter()
            .map(|&e| timed(e, data, calls))
            .max()
            .unwrap_or_default();
        if slowest >= probe || calls >= 1 << 40 {
            let per_call = slowest.as_secs_f64() / calls as f64;
            return ((target.as_secs_f64() / per_call.max(1e-12)) as u64).max(1);
        }
        calls *= 2;
    }
}

/// The same pseudo-random bytes on every run.
fn random_bytes(n: usize) -> Vec<u8> {
    let mut buf = vec![0u8; n];
    SplitMix64::new(0x0c5c_0004).fill(&mut buf);
    buf
}

/// Run the bench. `progress(done, total)` is called after each size.
pub fn run_bench(config: &BenchConfig, progress: &mut dyn FnMut(usize, usize)) -> BenchReport {
    let cpu = CpuFeatures::detect();
    let largest = config.sizes.iter().map(|s| s.bytes).max().unwrap_or(0);
    let data = random_bytes(largest);
    let mut counters = CpuCounters::open();
    let timebase = if counters
        .unsupported()
        .iter()
        .any(|f| f.kind == CounterKind::TaskClock)
    {
        Timebase::WallTime
    } else {
        Timebase::CpuTime
    };
    let rounds = config.rounds.max(1);
    let mut rows = Vec::with_capacity(config.sizes.len());
    for (i, size) in config.sizes.iter().enumerate() {
        let buf = &data[..size.bytes];
        let calls = calibrate(&config.engines, buf, config.target_time);
        // Per engine, the fastest round: (time in the timebase, wall time, readings).
        let mut best: Vec<Option<(f64, f64, Readings)>> = vec![None; config.engines.len()];
        for round in 0..rounds as usize {
            for k in 0..config.engines.len() {
                // Rotate the starting engine each round.
                let e = (k + round) % config.engines.len();
                counters.start();
                let wall = timed(config.engines[e], buf, calls).as_nanos() as f64;
                let r = counters.stop();
                let t = match (timebase, r.task_clock_ns.value()) {
                    (Timebase::CpuTime, Some(cpu)) => cpu,
                    _ => wall,
                };
                if best[e].is_none_or(|(bt, _, _)| t < bt) {
                    best[e] = Some((t, wall, r));
                }
            }
        }
        let bytes = (size.bytes as u64 * calls) as f64;
        let results = config
            .engines
            .iter()
            .zip(best)
            .filter_map(|(&engine, b)| {
                let (t, wall, readings) = b?;
                let (t, wall) = (t.max(1.0), wall.max(1.0));
                Some(EngineResult {
                    engine,
                    gbps: bytes / t,
                    wall_gbps: bytes / wall,
                    ns_per_call: t / calls as f64,
                    per_byte: readings.per(bytes),
                })
            })
            .collect();
        rows.push(BenchRow {
            size: *size,
            results,
        });
        progress(i + 1, config.sizes.len());
    }
    BenchReport {
        cpu,
        paths: config.engines.iter().map(|e| e.path_on(&cpu)).collect(),
        crc_fast_target: CrcEngine::crc_fast_target(),
        unsupported: counters.unsupported(),
        timebase,
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::csum::counters::Reading;

    #[test]
    fn default_sizes_cover_powers_and_structures_once_each() {
        let sizes = default_sizes();
        let bytes: Vec<usize> = sizes.iter().map(|s| s.bytes).collect();
        let mut sorted = bytes.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(bytes, sorted, "ascending, no duplicates");
        for p in (3..=20).map(|k| 1usize << k) {
            assert!(bytes.contains(&p), "{p}");
        }
        for (b, _) in STRUCTURE_SIZES {
            assert!(bytes.contains(&b), "{b}");
        }
        let at = |b: usize| sizes.iter().find(|s| s.bytes == b).and_then(|s| s.label);
        assert_eq!(at(328), Some("log record header"));
        assert!(at(4096).is_some_and(|l| l.contains("block")));
        assert_eq!(at(64), None);
    }

    fn row(bytes: usize, a: f64, b: f64) -> BenchRow {
        let r = |engine, gbps| EngineResult {
            engine,
            gbps,
            wall_gbps: gbps,
            ns_per_call: 1.0,
            per_byte: Readings {
                cycles: Reading::NotSupported,
                instructions: Reading::NotSupported,
                task_clock_ns: Reading::NotCounted,
            },
        };
        BenchRow {
            size: BenchSize { bytes, label: None },
            results: vec![r(CrcEngine::Crc32c, a), r(CrcEngine::Fast, b)],
        }
    }

    fn report(rows: Vec<BenchRow>) -> BenchReport {
        let cpu = CpuFeatures::detect();
        BenchReport {
            cpu,
            paths: [CrcEngine::Crc32c, CrcEngine::Fast]
                .map(|e| e.path_on(&cpu))
                .to_vec(),
            crc_fast_target: String::new(),
            unsupported: Vec::new(),
            timebase: Timebase::WallTime,
            rows,
        }
    }

    #[test]
    fn breakeven_is_where_the_challenger_wins_from_then_on() {
        let r = report(vec![
            row(8, 2.0, 1.0),
            row(64, 4.0, 5.0), // a lucky win below the real breakeven does not count
            row(256, 8.0, 7.0),
            row(512, 10.0, 10.0),
            row(4096, 12.0, 30.0),
        ]);
        assert_eq!(r.breakeven(CrcEngine::Crc32c, CrcEngine::Fast), Some(512));
        assert_eq!(r.breakeven(CrcEngine::Fast, CrcEngine::Crc32c), None);
        assert_eq!(
            r.breakevens(),
            vec![(CrcEngine::Crc32c, CrcEngine::Fast, 512)]
        );
        assert_eq!(
            r.ratio_at(4096, CrcEngine::Crc32c, CrcEngine::Fast),
            Some(2.5)
        );
        assert_eq!(r.ratio_at(100, CrcEngine::Crc32c, CrcEngine::Fast), None);
        let always = report(vec![row(8, 1.0, 2.0), row(16, 1.0, 2.0)]);
        assert_eq!(
            always.breakeven(CrcEngine::Crc32c, CrcEngine::Fast),
            Some(8)
        );
        // An engine not measured has no breakeven.
        assert_eq!(always.breakeven(CrcEngine::Crc32c, CrcEngine::Soft), None);
    }

    #[test]
    fn a_short_bench_measures_every_engine_at_every_size() {
        let config = BenchConfig {
            sizes: vec![
                BenchSize {
                    bytes: 64,
                    label: None,
                },
                BenchSize {
                    bytes: 4096,
                    label: Some("block"),
                },
            ],
            target_time: Duration::from_millis(1),
            rounds: 1,
            ..BenchConfig::default()
        };
        let mut seen = Vec::new();
        let r = run_bench(&config, &mut |done, total| seen.push((done, total)));
        assert_eq!(seen, vec![(1, 2), (2, 2)]);
        assert_eq!(r.rows.len(), 2);
        for row in &r.rows {
            for e in CrcEngine::ALL {
                let res = row.result(e).expect("measured");
                assert!(res.gbps > 0.0 && res.ns_per_call > 0.0, "{e} {res:?}");
            }
        }
        assert_eq!(r.paths.len(), 3);
    }
}
