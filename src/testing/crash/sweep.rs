//! Checking crash states and sweeping a workload's flush points.
//!
//! [`Recording::check`] builds one crash image, mounts it (log recovery runs there), runs the
//! full checker and the oracle. [`sweep`] records a workload once and checks the crash
//! states [`states_at`] picks at every flush point. A failure is a [`Failure`]: the
//! [`Case`] (workload and crash state, one line that reruns it), the crash moment, which
//! pending writes landed and how one tore, and every finding.

use std::collections::HashSet;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use crate::fs::Fs;
use crate::fs::check::check;
use crate::fs::dev::BlockDev;
use crate::fs::dev::fault::{Position, TornWrite, WriteInfo};
use crate::fs::options::Options;
use crate::testing::crash::HarnessError;
use crate::testing::crash::image::Actual;
use crate::testing::crash::oracle::{Finding, Index, judge};
use crate::testing::crash::plan::{Coverage, CrashSpec, resolve, states_at};
use crate::testing::crash::record::Recording;
use crate::testing::crash::workload::Workload;

/// The command that reruns one case (the `crashtest` example).
pub const RERUN: &str = "cargo run --release --example crashtest -- --case";

/// A workload and one crash state of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// The workload.
    pub workload: Workload,
    /// The crash state.
    pub crash: CrashSpec,
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.workload, self.crash)
    }
}

impl FromStr for Case {
    type Err = HarnessError;

    fn from_str(s: &str) -> Result<Case, HarnessError> {
        let (w, c) = s.rsplit_once('@').ok_or_else(|| {
            HarnessError::BadCase(format!(
                "case {s:?} is not WORKLOAD@POINT.COMPLETED.LANDING"
            ))
        })?;
        Ok(Case {
            workload: w.parse()?,
            crash: c.parse()?,
        })
    }
}

impl Case {
    /// The shell command that reruns exactly this case.
    pub fn rerun_command(&self) -> String {
        format!("{RERUN} '{self}'")
    }
}

/// One checked crash state.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The state.
    pub spec: CrashSpec,
    /// The crash moment.
    pub crash: Position,
    /// The flush point's pending writes.
    pub pending: Vec<WriteInfo>,
    /// Positions in `pending` of the writes that landed, in the order they landed.
    pub landed: Vec<usize>,
    /// The torn write, if any.
    pub torn: Option<TornWrite>,
    /// What is wrong (empty: the image passes).
    pub findings: Vec<Finding>,
}

/// A crash state that failed, with everything needed to understand and rerun it.
#[derive(Debug, Clone)]
pub struct Failure {
    /// The case.
    pub case: Case,
    /// The checked state.
    pub checked: Checked,
}

/// Positions as ranges: `0-5,7,9-12` (sorted; "none" when empty).
fn ranges(positions: &[usize]) -> String {
    let mut sorted = positions.to_vec();
    sorted.sort_unstable();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    if out.is_empty() {
        "none".to_string()
    } else {
        out.join(",")
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.checked;
        writeln!(f, "crash case {} failed:", self.case)?;
        let shuffled = c.landed.windows(2).any(|w| w[0] > w[1]);
        writeln!(
            f,
            "  crash at flush point {} after {} of its {} pending writes completed ({}); \
             landed: {}{}{}",
            c.spec.point,
            c.spec.completed,
            c.pending.len(),
            c.crash,
            ranges(&c.landed),
            if shuffled {
                " (in a shuffled order)"
            } else {
                ""
            },
            match &c.torn {
                Some(t) => format!(
                    "; write {} torn ({} of its {} sectors landed: {})",
                    t.position,
                    t.landed.len(),
                    t.sectors,
                    ranges(&t.landed.iter().map(|&s| s as usize).collect::<Vec<_>>())
                ),
                None => String::new(),
            }
        )?;
        for finding in &c.findings {
            writeln!(f, "  - {finding}")?;
        }
        write!(f, "  rerun: {}", self.case.rerun_command())
    }
}

impl Recording {
    /// Build, mount and check one crash state.
    pub fn check(&self, index: &Index, spec: &CrashSpec) -> Result<Checked, HarnessError> {
        let r = resolve(&self.fault, spec)?;
        let image = self.fault.crash_image(&r.plan)?;
        let mut checked = Checked {
            spec: *spec,
            crash: r.crash,
            pending: r.pending,
            landed: image.applied.clone(),
            torn: image.torn.clone(),
            findings: Vec::new(),
        };
        checked.findings = judge_image(image.dev as Arc<dyn BlockDev>, &self.options, |actual| {
            judge(&self.history, index, r.crash, actual)
        });
        Ok(checked)
    }

    /// Flush points this recording can crash at.
    pub fn points(&self) -> std::ops::RangeInclusive<u64> {
        self.first_point..=self.last_point
    }
}

/// Mount an image, run fsck, read the tree and hand it to `oracle`.
fn judge_image(
    dev: Arc<dyn BlockDev>,
    options: &Options,
    oracle: impl FnOnce(&Actual) -> Vec<Finding>,
) -> Vec<Finding> {
    let fs = match Fs::mount(dev, options.mount.clone()) {
        Ok(fs) => fs,
        Err(e) => return vec![Finding::Mount(e)],
    };
    let mut findings = Vec::new();
    match check(&fs) {
        Ok(r) if r.is_clean() => {}
        Ok(r) => findings.push(Finding::Fsck(r.findings)),
        Err(e) => findings.push(Finding::Read(e)),
    }
    match Actual::read(&fs) {
        Ok(actual) => findings.extend(oracle(&actual)),
        Err(e) => findings.push(Finding::Read(e)),
    }
    findings
}

/// How to sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SweepOptions {
    /// Which crash states per flush point.
    pub coverage: Coverage,
    /// The seed of the random states.
    pub seed: u64,
    /// Stop after this many failures (0: never stop early).
    pub stop_after: usize,
}

/// What a sweep covered and found.
#[derive(Debug, Clone, Default)]
pub struct SweepReport {
    /// Flush points swept.
    pub flush_points: u64,
    /// Distinct crash moments (flush point and completed writes).
    pub crash_points: u64,
    /// Crash images checked.
    pub images: u64,
    /// Of those, how many had unflushed writes land or tear.
    pub unflushed_images: u64,
    /// Operations the workload made.
    pub steps: usize,
    /// Failed states.
    pub failures: Vec<Failure>,
}

impl SweepReport {
    /// Add another report's counts and failures.
    pub fn absorb(&mut self, other: SweepReport) {
        self.flush_points += other.flush_points;
        self.crash_points += other.crash_points;
        self.images += other.images;
        self.unflushed_images += other.unflushed_images;
        self.steps += other.steps;
        self.failures.extend(other.failures);
    }
}

impl fmt::Display for SweepReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} operations, {} flush points, {} crash points, {} images ({} with unflushed \
             writes landed or torn), {} failed",
            self.steps,
            self.flush_points,
            self.crash_points,
            self.images,
            self.unflushed_images,
            self.failures.len()
        )
    }
}

/// Record a workload and check crash states at every flush point.
pub fn sweep(
    workload: &Workload,
    options: &Options,
    opts: &SweepOptions,
) -> Result<SweepReport, HarnessError> {
    let recording = workload.record(options)?;
    sweep_recording(workload, &recording, opts)
}

/// Check crash states at every flush point of a recording.
pub fn sweep_recording(
    workload: &Workload,
    recording: &Recording,
    opts: &SweepOptions,
) -> Result<SweepReport, HarnessError> {
    let index = Index::new(&recording.history);
    let mut report = SweepReport {
        steps: recording.history.steps.len(),
        ..SweepReport::default()
    };
    let mut moments = HashSet::new();
    for k in recording.points() {
        report.flush_points += 1;
        for spec in states_at(&recording.fault, k, opts.coverage, opts.seed)? {
            let checked = recording.check(&index, &spec)?;
            moments.insert((spec.point, spec.completed));
            report.images += 1;
            if !checked.landed.is_empty() || checked.torn.is_some() {
                report.unflushed_images += 1;
            }
            if !checked.findings.is_empty() {
                report.failures.push(Failure {
                    case: Case {
                        workload: workload.clone(),
                        crash: spec,
                    },
                    checked,
                });
                if opts.stop_after > 0 && report.failures.len() >= opts.stop_after {
                    report.crash_points = moments.len() as u64;
                    return Ok(report);
                }
            }
        }
    }
    report.crash_points = moments.len() as u64;
    Ok(report)
}

/// Rerun one case: record its workload and check its crash state.
pub fn rerun(case: &Case, options: &Options) -> Result<Checked, HarnessError> {
    let recording = case.workload.record(options)?;
    let index = Index::new(&recording.history);
    recording.check(&index, &case.crash)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn landed_writes_print_as_ranges() {
        assert_eq!(ranges(&[]), "none");
        assert_eq!(ranges(&[3]), "3");
        assert_eq!(ranges(&[5, 0, 1, 2, 7, 9, 10]), "0-2,5,7,9-10");
    }

    #[test]
    fn cases_round_trip_and_name_their_rerun_command() {
        let s = "fsx:seed=7,ops=300,files=3,max=65536@12.3.subset-91";
        let case: Case = s.parse().expect("valid");
        assert_eq!(case.to_string(), s);
        assert_eq!(
            case.rerun_command(),
            format!("cargo run --release --example crashtest -- --case '{s}'")
        );
        let ace: Case = "ace:create:A/bar+fsync:A/bar@4.0.durable"
            .parse()
            .expect("valid");
        assert_eq!(ace.crash.point, 4);
        assert!("fsx:seed=1".parse::<Case>().is_err());
        assert!("fsx:seed=1@1.2".parse::<Case>().is_err());
    }
}
