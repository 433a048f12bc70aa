//! Fidelity: labfs's XFS statistics against kernel XFS's for the same fs_mark workload, per
//! file, field by field.
//!
//! A [`Fixture`] is what `scripts/record_kernel_fixtures.sh` recorded on a real kernel: the
//! fsmark command it ran on a freshly made 4 GiB loop XFS, how many files that made, and the
//! mount's statistics (`/sys/fs/xfs/<dev>/stats/stats`, cleared after the test directory was
//! made and synced, read after `syncfs` once the counters stopped moving, before unmount).
//! [`measure`] repeats that recipe on labfs in-process, on [`FIDELITY_DEVICE`]: make the `-d`
//! directories (the first made after mounting, [`LAB_MOUNT`]), sync, clear the mount's
//! statistics, run the fs_mark engine, `syncfs`, read the statistics; unmounting comes after
//! the reading on both sides. [`Comparison::new`] divides both sides
//! by their files and judges every field of the stat layout with [`table::rule_for`]: within
//! [`table::BAND`], or an exception or known gap with its reason.
//!
//! Per-file figures make the two sides comparable, and only at the same size: tree work per
//! file grows with the trees (the kernel's were the full run's) and one-off costs (the first
//! directory blocks, the final sync) are spread over the run's files, which is why the
//! fidelity test runs every fixture in full.

pub mod table;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use thiserror::Error;

use crate::backend::open::{BackendConfig, LabConfig, OpenError, OpenedBackend, open};
use crate::backend::{Target, TargetError, mkdir_all};
use crate::fs::stats::layout::current_layout;
use crate::fs::stats::{DecodeError, MountStats, StatFile};
use crate::workload::fsmark::{self, Config, FsmarkError, Reporter};
use crate::workload::{Clock, SystemClock};

use table::{BAND, RARE_PER_FILE, Rule, rule_for};

/// Where labfs runs a fixture's `-d` directories: the recorded command's mount point (`MNT`)
/// becomes labfs's root, so `MNT/t` is `/t`, the first directory made after mounting, as it
/// is on the kernel (XFS spreads new directories over the AGs from a per-mount rotor, so
/// which AG the test directory and its files live in depends on it).
pub const LAB_MOUNT: &str = "/";

/// The device labfs runs a fixture on: a 4 GiB memory device, the fixtures' size (four AGs
/// of 1 GiB, `mkfs.xfs`'s default for it), whose cache flushes take 220 us.
///
/// The flush time stands for the recording's loop device: labfs writes the log with a flush
/// per record, so with this cost it runs the one-thread fsync fixture at about the kernel's
/// rate (s1-4k-n2000-t1: 1854 files/s recorded; labfs about 2050 here). On a device that
/// never waits, two fsync threads no longer take turns file by file as they do on the
/// kernel but run in bursts, and everything that depends on how their files interleave on
/// disk (free-space fragments when they are unlinked, B+tree shifts) would differ for that
/// reason alone.
pub const FIDELITY_DEVICE: &str = "mem:4g,flush=220us";

/// A recorded kernel run (one directory of `tests/fixtures/kernel`).
#[derive(Debug, Clone)]
pub struct Fixture {
    /// The workload's name (the directory name).
    pub name: String,
    /// fsmark's arguments as recorded, after `fsmark` and without `--fs host`, with the mount
    /// point written `MNT`.
    pub args: Vec<String>,
    /// Files the kernel run created.
    pub files: u64,
    /// The kernel it ran on (`uname -r`).
    pub kernel: String,
    /// How the statistics were read (e.g. "settled after 200 ms").
    pub stats_note: String,
    /// The mount's statistics for the run.
    pub stats: StatFile,
}

/// A fixture that could not be read.
#[derive(Debug, Error)]
pub enum FixtureError {
    /// A fixture file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// `meta.txt` lacks a line the comparison needs.
    #[error("{}: no '{key}:' line", path.display())]
    MissingKey {
        /// The meta file.
        path: PathBuf,
        /// The key looked for.
        key: &'static str,
    },
    /// `meta.txt`'s command is not an fsmark command line.
    #[error("{}: the command is not 'fsmark ...': {command:?}", path.display())]
    NotFsmark {
        /// The meta file.
        path: PathBuf,
        /// The command found.
        command: String,
    },
    /// `meta.txt`'s file count is not a positive number.
    #[error("{}: 'files:' is not a positive number: {value:?}", path.display())]
    BadFiles {
        /// The meta file.
        path: PathBuf,
        /// The value found.
        value: String,
    },
    /// `stats.txt` is not stat text.
    #[error("{}: {source}", path.display())]
    Stats {
        /// The stats file.
        path: PathBuf,
        /// What did not parse.
        source: DecodeError,
    },
}

fn read_text(path: &Path) -> Result<String, FixtureError> {
    std::fs::read_to_string(path).map_err(|source| FixtureError::Read {
        path: path.to_path_buf(),
        source,
    })
}

impl Fixture {
    /// Read the fixture in directory `dir` (`meta.txt` and `stats.txt`).
    pub fn load(dir: &Path) -> Result<Fixture, FixtureError> {
        let meta_path = dir.join("meta.txt");
        let meta = read_text(&meta_path)?;
        let value = |key: &'static str| {
            meta.lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
                .map(str::trim)
                .ok_or_else(|| FixtureError::MissingKey {
                    path: meta_path.clone(),
                    key,
                })
        };
        let command = value("command")?;
        let mut words = command.split_whitespace();
        if words.next() != Some("fsmark") {
            return Err(FixtureError::NotFsmark {
                path: meta_path.clone(),
                command: command.to_string(),
            });
        }
        let mut args = Vec::new();
        let mut words = words.peekable();
        while let Some(w) = words.next() {
            // The recording ran on the host; the comparison runs the same workload on labfs.
            if w == "--fs" && words.peek() == Some(&"host") {
                words.next();
                continue;
            }
            args.push(w.to_string());
        }
        let files_text = value("files")?;
        let files = files_text
            .parse::<u64>()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| FixtureError::BadFiles {
                path: meta_path.clone(),
                value: files_text.to_string(),
            })?;
        let stats_path = dir.join("stats.txt");
        let stats =
            StatFile::parse(&read_text(&stats_path)?).map_err(|source| FixtureError::Stats {
                path: stats_path,
                source,
            })?;
        let name = dir.file_name().map_or_else(
            || dir.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        Ok(Fixture {
            name,
            args,
            files,
            kernel: value("kernel").unwrap_or("unknown").to_string(),
            stats_note: value("stats").unwrap_or("").to_string(),
            stats,
        })
    }

    /// The recorded arguments with the mount point `MNT` replaced by [`LAB_MOUNT`], ready for
    /// fsmark's argument parser (program name first).
    pub fn lab_argv(&self) -> Vec<String> {
        let mount = Path::new(LAB_MOUNT);
        std::iter::once("fsmark".to_string())
            .chain(self.args.iter().map(|a| {
                match a.strip_prefix("MNT") {
                    Some(rest) => mount
                        .join(rest.trim_start_matches('/'))
                        .display()
                        .to_string(),
                    None => a.clone(),
                }
            }))
            .collect()
    }
}

/// The labfs side of a comparison.
#[derive(Debug, Clone)]
pub struct LabRun {
    /// Files the run created.
    pub files: u64,
    /// The mount's statistics for the run (cleared after the directories were made, read
    /// after the final syncfs).
    pub stats: StatFile,
}

/// A labfs run for a comparison failed.
#[derive(Debug, Error)]
pub enum FidelityError {
    /// labfs could not be made or mounted.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// A `-d` directory could not be made.
    #[error("cannot make {} on labfs: {source}", path.display())]
    Setup {
        /// The directory.
        path: PathBuf,
        /// What labfs said.
        source: TargetError,
    },
    /// The fs_mark run failed.
    #[error("fsmark: {0}")]
    Fsmark(#[from] FsmarkError),
    /// The final syncfs failed.
    #[error("syncfs on labfs: {0}")]
    Sync(#[source] TargetError),
    /// Unmounting (writing everything back) failed.
    #[error("unmounting labfs: {0}")]
    Unmount(#[source] TargetError),
}

/// Run `config` on a mounted labfs the way the kernel fixtures were recorded: make the `-d`
/// directories, sync, clear the mount's statistics, run fs_mark (reporting to `reporter`),
/// syncfs, and read the statistics.
pub fn measure(
    target: &dyn Target,
    stats: &MountStats,
    config: &Config,
    clock: &dyn Clock,
    interrupt: Option<&AtomicBool>,
    reporter: &mut dyn Reporter,
) -> Result<(LabRun, fsmark::RunOutcome), FidelityError> {
    for dir in &config.dirs {
        let setup = |source| FidelityError::Setup {
            path: dir.clone(),
            source,
        };
        mkdir_all(target, dir).map_err(setup)?;
    }
    // The recording syncs after making the test directory, so that the mkdir's log force
    // and write-back fall before the window.
    target
        .syncfs(&config.dirs[0])
        .map_err(FidelityError::Sync)?;
    stats.mount().clear();
    let env = fsmark::RunEnv {
        target,
        clock,
        interrupt,
    };
    let outcome = fsmark::run(&env, config, reporter)?;
    target
        .syncfs(&config.dirs[0])
        .map_err(FidelityError::Sync)?;
    let files =
        u64::from(config.num_files) * u64::from(config.threads) * outcome.rates.len() as u64;
    let run = LabRun {
        files,
        stats: StatFile::from(&stats.mount().snapshot()),
    };
    Ok((run, outcome))
}

/// Run `config` with [`measure`] on a labfs made fresh on `lab`'s device, silently, and
/// unmount it.
pub fn run_on_fresh_labfs(lab: &LabConfig, config: &Config) -> Result<LabRun, FidelityError> {
    let mut lab = lab.clone();
    lab.mkfs = true;
    let opened = open(&BackendConfig::Lab(lab))?;
    let OpenedBackend::Lab(target) = &opened else {
        unreachable!("a labfs configuration opens labfs");
    };
    let measured = measure(
        target.as_ref(),
        &target.fs().stats,
        config,
        &SystemClock,
        None,
        &mut fsmark::Silent,
    );
    // Unmount whatever happened; a run failure is the one worth reporting first.
    let unmounted = opened.finish().map_err(FidelityError::Unmount);
    let (run, _) = measured?;
    unmounted?;
    Ok(run)
}

/// How one field came out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    /// Both sides are zero.
    BothZero,
    /// Both sides count it fewer than [`RARE_PER_FILE`] times per file.
    Rare,
    /// labfs / kernel lies within the band.
    Within,
    /// labfs / kernel lies outside the band (infinite when the kernel counts none).
    Outside,
    /// Not held to the band: an exception (see [`Rule`]).
    Excepted,
    /// Not held to the band: a known gap labfs has yet to close.
    Gap,
}

impl Verdict {
    /// A few characters for the table.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::BothZero => "ok (0)",
            Verdict::Rare => "ok (rare)",
            Verdict::Within => "ok",
            Verdict::Outside => "OUTSIDE",
            Verdict::Excepted => "exception",
            Verdict::Gap => "GAP",
        }
    }
}

/// One field compared.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Row {
    /// The stat line.
    pub line: &'static str,
    /// The field's short name.
    pub field: &'static str,
    /// The kernel's count for the run.
    pub kernel: u64,
    /// labfs's count for the run.
    pub lab: u64,
    /// The kernel's count per file.
    pub kernel_per_file: f64,
    /// labfs's count per file.
    pub lab_per_file: f64,
    /// The rule the field is judged by.
    pub rule: Rule,
    /// How it came out.
    pub verdict: Verdict,
}

impl Row {
    /// labfs per file / kernel per file (infinite when only labfs counts it, NaN for 0/0).
    pub fn ratio(&self) -> f64 {
        self.lab_per_file / self.kernel_per_file
    }
}

/// Judge one field's per-file counts by `rule`.
pub fn judge(kernel_per_file: f64, lab_per_file: f64, rule: Rule) -> Verdict {
    match rule {
        Rule::Exception(_) => Verdict::Excepted,
        Rule::Gap(_) => Verdict::Gap,
        Rule::Band if kernel_per_file == 0.0 && lab_per_file == 0.0 => Verdict::BothZero,
        Rule::Band if kernel_per_file < RARE_PER_FILE && lab_per_file < RARE_PER_FILE => {
            Verdict::Rare
        }
        Rule::Band => {
            let ratio = lab_per_file / kernel_per_file;
            if (1.0 / BAND..=BAND).contains(&ratio) {
                Verdict::Within
            } else {
                Verdict::Outside
            }
        }
    }
}

/// Every field of the stat layout, kernel against labfs, per file.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// The fixture's name.
    pub fixture: String,
    /// Files the kernel run made.
    pub kernel_files: u64,
    /// Files the labfs run made.
    pub lab_files: u64,
    /// One row per field, in stat-file order.
    pub rows: Vec<Row>,
}

impl Comparison {
    /// Compare `lab` with `fixture` field by field (a line missing from either side counts as
    /// zeros there).
    pub fn new(fixture: &Fixture, lab: &LabRun) -> Comparison {
        let kernel_files = fixture.files as f64;
        let lab_files = lab.files.max(1) as f64;
        let mut rows = Vec::new();
        for spec in current_layout() {
            if spec.name == "debug" {
                // A property of the kernel build, not an event.
                continue;
            }
            for (i, field) in spec.fields.iter().enumerate() {
                let kernel = fixture.stats.get(spec.name, i).unwrap_or(0);
                let labv = lab.stats.get(spec.name, i).unwrap_or(0);
                let rule = rule_for(&fixture.name, spec.name, field.name);
                let (k, l) = (kernel as f64 / kernel_files, labv as f64 / lab_files);
                rows.push(Row {
                    line: spec.name,
                    field: field.name,
                    kernel,
                    lab: labv,
                    kernel_per_file: k,
                    lab_per_file: l,
                    rule,
                    verdict: judge(k, l, rule),
                });
            }
        }
        Comparison {
            fixture: fixture.name.clone(),
            kernel_files: fixture.files,
            lab_files: lab.files,
            rows,
        }
    }

    /// The fields held to the band that left it.
    pub fn outside(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(|r| r.verdict == Verdict::Outside)
    }

    /// The side-by-side table: every field either side counted, per file, with the ratio and
    /// the verdict, then the reasons of the exceptions shown.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "fidelity {}: kernel {} files, labfs {} files; per file, band {BAND}x",
            self.fixture, self.kernel_files, self.lab_files
        );
        let _ = writeln!(
            out,
            "{:<14}{:<18}{:>12}{:>12}{:>9}  verdict",
            "line", "field", "kernel/file", "labfs/file", "ratio"
        );
        let mut zero = 0;
        let mut reasons: Vec<(&str, &str, &str)> = Vec::new();
        for r in &self.rows {
            if r.kernel == 0 && r.lab == 0 {
                zero += 1;
                continue;
            }
            let ratio = r.ratio();
            let ratio = if ratio.is_finite() {
                format!("{ratio:.2}")
            } else {
                "-".to_string()
            };
            let _ = writeln!(
                out,
                "{:<14}{:<18}{:>12.3}{:>12.3}{:>9}  {}",
                r.line,
                r.field,
                r.kernel_per_file,
                r.lab_per_file,
                ratio,
                r.verdict.label()
            );
            if let Some(reason) = r.rule.reason() {
                reasons.push((r.line, r.field, reason));
            }
        }
        let outside = self.outside().count();
        let gaps = self
            .rows
            .iter()
            .filter(|r| r.verdict == Verdict::Gap)
            .count();
        let _ = writeln!(
            out,
            "{} fields compared: {outside} outside the band, {gaps} known gaps, {zero} zero on both sides (not shown)",
            self.rows.len(),
        );
        // Each reason once, with the fields it covers.
        let mut grouped: Vec<(&str, Vec<String>)> = Vec::new();
        for (line, field, reason) in reasons {
            let name = format!("{line} {field}");
            match grouped.iter_mut().find(|(r, _)| *r == reason) {
                Some((_, fields)) => fields.push(name),
                None => grouped.push((reason, vec![name])),
            }
        }
        for (reason, fields) in grouped {
            let _ = writeln!(out, "  {}: {reason}", fields.join(", "));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_band_is_two_x_either_way_and_two_zeros_agree() {
        assert_eq!(judge(0.0, 0.0, Rule::Band), Verdict::BothZero);
        assert_eq!(judge(1.0, 2.0, Rule::Band), Verdict::Within);
        assert_eq!(judge(1.0, 0.5, Rule::Band), Verdict::Within);
        assert_eq!(judge(1.0, 2.01, Rule::Band), Verdict::Outside);
        assert_eq!(judge(1.0, 0.49, Rule::Band), Verdict::Outside);
        assert_eq!(judge(0.0, 1.0, Rule::Band), Verdict::Outside);
        assert_eq!(judge(1.0, 0.0, Rule::Band), Verdict::Outside);
        assert_eq!(judge(0.001, 0.015, Rule::Band), Verdict::Rare);
        assert_eq!(judge(0.001, 0.5, Rule::Band), Verdict::Outside);
        assert_eq!(judge(5.0, 0.0, Rule::Exception("x")), Verdict::Excepted);
        assert_eq!(judge(5.0, 0.0, Rule::Gap("x")), Verdict::Gap);
    }

    fn fixture_dir(meta: &str, stats: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("meta.txt"), meta).expect("meta");
        std::fs::write(dir.path().join("stats.txt"), stats).expect("stats");
        dir
    }

    #[test]
    fn the_fidelity_device_is_a_valid_device_spec() {
        let spec: crate::fs::dev::spec::DeviceSpec =
            FIDELITY_DEVICE.parse().expect("FIDELITY_DEVICE parses");
        assert!(spec.to_string().starts_with("mem:4"), "{spec}");
    }

    #[test]
    fn a_fixture_reads_its_command_files_and_stats() {
        let dir = fixture_dir(
            "workload: x\ncommand: fsmark --fs host -d MNT/t -S1 -n 10\nfiles: 10\nkernel: 6.18\n",
            "dir 10 20 30 0\n",
        );
        let f = Fixture::load(dir.path()).expect("loads");
        assert_eq!(f.files, 10);
        assert_eq!(f.kernel, "6.18");
        assert_eq!(f.lab_argv(), ["fsmark", "-d", "/t", "-S1", "-n", "10"]);
        assert_eq!(f.stats.get("dir", 1), Some(20));
    }

    #[test]
    fn a_bad_fixture_says_what_is_wrong() {
        let dir = fixture_dir("command: dd if=x\nfiles: 1\n", "dir 1 1 1 1\n");
        assert!(matches!(
            Fixture::load(dir.path()),
            Err(FixtureError::NotFsmark { .. })
        ));
        let dir = fixture_dir("command: fsmark -n 1\nfiles: 0\n", "dir 1 1 1 1\n");
        assert!(matches!(
            Fixture::load(dir.path()),
            Err(FixtureError::BadFiles { .. })
        ));
        let dir = fixture_dir("files: 3\n", "dir 1 1 1 1\n");
        let e = Fixture::load(dir.path()).expect_err("no command");
        assert!(e.to_string().contains("no 'command:' line"), "{e}");
    }

    #[test]
    fn comparison_divides_by_each_sides_files() {
        let dir = fixture_dir(
            "command: fsmark -d MNT/t -n 100\nfiles: 100\n",
            "dir 100 100 100 0\nrw 100 0\n",
        );
        let fixture = Fixture::load(dir.path()).expect("loads");
        let lab = LabRun {
            files: 10,
            stats: StatFile::parse("dir 60 10 10 0\nrw 10 0\n").expect("stats"),
        };
        let c = Comparison::new(&fixture, &lab);
        let row = |line: &str, field: &str| {
            *c.rows
                .iter()
                .find(|r| r.line == line && r.field == field)
                .expect("row")
        };
        assert_eq!(row("dir", "lookup").verdict, Verdict::Outside);
        assert!((row("dir", "lookup").ratio() - 6.0).abs() < 1e-9);
        assert_eq!(row("dir", "create").verdict, Verdict::Within);
        assert_eq!(row("rw", "write_calls").verdict, Verdict::Within);
        // The journal's fields are judged like the rest: the fixture has no log line, so
        // labfs's zero forces and writes agree with the kernel's; an exception stays one.
        assert_eq!(row("log", "force").verdict, Verdict::BothZero);
        assert_eq!(row("log", "writes").verdict, Verdict::BothZero);
        assert_eq!(row("attr", "get").verdict, Verdict::Excepted);
        assert_eq!(c.outside().count(), 1);
        let text = c.render();
        assert!(text.contains("OUTSIDE"), "{text}");
        assert!(text.contains("1 outside the band"), "{text}");
    }
}
