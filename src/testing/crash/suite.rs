//! Named sets of workloads, and sweeping many of them on a few threads.
//!
//! - [`Suite::Ci`]: what every test run covers, in seconds: fs_mark `-S1` and `-S4` (40
//!   files each), three fsx seeds of 300 operations, every one-operation ACE sequence and a
//!   fixed sample of the two-operation ones.
//! - [`Suite::Long`]: the documented long run: bigger fs_mark runs, twenty fsx seeds of 1000
//!   operations, and every ACE sequence within [`AceBounds::default`].

use std::fmt;
use std::str::FromStr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::fs::options::Options;
use crate::testing::crash::HarnessError;
use crate::testing::crash::ace::{AceBounds, sequences, setup_model};
use crate::testing::crash::sweep::{SweepOptions, SweepReport, sweep};
use crate::testing::crash::workload::{FsmarkLoad, FsxLoad, Workload};

/// A named set of workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Suite {
    /// The per-run set (seconds).
    Ci,
    /// The long run.
    Long,
}

impl fmt::Display for Suite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Suite::Ci => "ci",
            Suite::Long => "long",
        })
    }
}

impl FromStr for Suite {
    type Err = HarnessError;

    fn from_str(s: &str) -> Result<Suite, HarnessError> {
        match s {
            "ci" => Ok(Suite::Ci),
            "long" => Ok(Suite::Long),
            _ => Err(HarnessError::BadCase(format!(
                "unknown suite {s:?} (ci or long)"
            ))),
        }
    }
}

/// Of the two-operation ACE sequences, CI runs every this-many-th.
const CI_ACE_STRIDE: usize = 40;

impl Suite {
    /// The fs_mark and fsx workloads of the suite.
    pub fn generated(self) -> Vec<Workload> {
        let (files, fsx_seeds, fsx_ops) = match self {
            Suite::Ci => (40, 1..=3u64, 300),
            Suite::Long => (400, 1..=20u64, 1000),
        };
        let mut out = vec![
            Workload::Fsmark(FsmarkLoad {
                sync: 1,
                files,
                size: 4096,
                threads: 1,
            }),
            Workload::Fsmark(FsmarkLoad {
                sync: 4,
                files,
                size: 4096,
                threads: 1,
            }),
        ];
        out.extend(fsx_seeds.map(|seed| {
            Workload::Fsx(FsxLoad {
                seed,
                ops: fsx_ops,
                files: 3,
                max: 64 << 10,
            })
        }));
        out
    }

    /// The ACE sequences of the suite.
    pub fn ace(self, options: &Options) -> Result<Vec<Workload>, HarnessError> {
        let start = setup_model(options)?;
        let seqs = match self {
            Suite::Ci => {
                let short = sequences(
                    AceBounds {
                        max_core: 2,
                        persist_between_up_to: 2,
                    },
                    &start,
                );
                short
                    .into_iter()
                    .enumerate()
                    .filter(|(i, s)| s.0.len() <= 2 || i % CI_ACE_STRIDE == 0)
                    .map(|(_, s)| s)
                    .collect()
            }
            Suite::Long => sequences(AceBounds::default(), &start),
        };
        Ok(seqs.into_iter().map(Workload::Ace).collect())
    }

    /// Every workload of the suite.
    pub fn workloads(self, options: &Options) -> Result<Vec<Workload>, HarnessError> {
        let mut out = self.generated();
        out.extend(self.ace(options)?);
        Ok(out)
    }
}

/// Sweep many workloads on `jobs` threads. `on_done` hears about each workload as it
/// finishes (from the thread that ran it). The first harness error stops the run.
pub fn sweep_all(
    workloads: &[Workload],
    options: &Options,
    opts: &SweepOptions,
    jobs: usize,
    on_done: &(dyn Fn(&Workload, &SweepReport) + Sync),
) -> Result<SweepReport, HarnessError> {
    let next = AtomicUsize::new(0);
    let total = Mutex::new(SweepReport::default());
    let error: Mutex<Option<HarnessError>> = Mutex::new(None);
    let stop = |e: HarnessError| {
        let mut slot = error
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        slot.get_or_insert(e);
    };
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(w) = workloads.get(i) else { break };
                    let stopped = error
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .is_some();
                    if stopped {
                        break;
                    }
                    match sweep(w, options, opts) {
                        Ok(r) => {
                            on_done(w, &r);
                            total
                                .lock()
                                .unwrap_or_else(std::sync::PoisonError::into_inner)
                                .absorb(r);
                        }
                        Err(e) => stop(HarnessError::Workload {
                            workload: w.to_string(),
                            source: Box::new(e),
                        }),
                    }
                }
            });
        }
    });
    if let Some(e) = error
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
    {
        return Err(e);
    }
    Ok(total
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner))
}
