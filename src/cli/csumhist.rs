//! `csumhist`: where labfs's metadata checksum work goes, and how fast each CRC engine is
//! (thread 004, "larger batches for crc32c").
//!
//! Three subcommands:
//!
//! - `run`: run a workload (a built-in profile, or any fsmark or fiolike command line after
//!   `--`: fiolike's jobs run in-process on the fresh labfs through fio's engine) on a
//!   fresh labfs with the `crc32c` tracepoint aggregated, and print the thread's table (one
//!   row per ilog2 bucket with its byte range; frequency % and bytes % of total, head and
//!   tail), the per-structure breakdown, and with `--cksum both` the side-by-side comparison of
//!   the single-pass and split update methods; `--json FILE`.
//! - `stat`: run the workload and print the XFS stat block of the measured phase and its
//!   decoded form, as Dave Chinner decoded Nick Piggin's dump.
//! - `bench`: throughput of each engine for every power of two from 8 bytes to 1 MiB and the
//!   structures' exact sizes, the breakeven size, CPU counters per byte; `--json FILE`,
//!   `--plot FILE.svg`.
//!
//! csumhist is built from the tool skeleton's pieces ([`super::tool::parse`], the two-stage
//! Ctrl-C of [`super::interrupt`], [`OutputFile`]s created before any work, the backend flags
//! and [`crate::backend::open::open`], [`ExitStatus`]) rather than [`super::tool::execute`],
//! because a comparison needs one freshly made labfs per checksum mode (the mode is a mount
//! option), and the bench needs no filesystem at all. It runs on labfs only: the tracepoint
//! it counts is labfs's.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use thiserror::Error;

use super::ExitStatus;
use super::backend_args::{BackendArgs, BackendArgsError, FsKind};
use super::fsmark::args::FsmarkArgs;
use super::interrupt;
use super::tool::{parse, usage_error_line};
use crate::backend::open::{BackendConfig, LabConfig};
use crate::fs::cksum::CksumMode;
use crate::report::csum::plot::{self, PlotError};
use crate::report::csum::{RunView, json as report_json, text};
use crate::report::output::{OutputError, OutputFile};
use crate::report::progress::Ticker;
use crate::units::{parse_duration, parse_size};
use crate::workload::csum::bench::{BenchConfig, run_bench};
use crate::workload::csum::calls::{BadThreshold, CallFilter, SmallBelow};
use crate::workload::csum::run::{LiveProgress, OpsError};
use crate::workload::csum::{CsumError, Measured, Profile, Workload, measure};
use crate::workload::fio::cmdline::{self, Action, CmdlineError, Switches};
use crate::workload::fio::jobfile::{Keywords, ProcessEnv};
use crate::workload::fio::jobset::{self, FsReader, JobSet, JobSetError};
use crate::workload::fio::number::SizeValue;
use crate::workload::fsmark::ConfigError;

const NAME: &str = "csumhist";

const AFTER_HELP: &str = "\
Examples:
  csumhist run                                  fsmark-s1, single and split side by side
  csumhist run --profile oltp --cksum split     the database-like mix, split updates only
  csumhist run --cksum split -- -d /x -n 5000 -s 0 -S 1     any fsmark command line
  csumhist run -- fiolike --name=j --rw=randwrite --bs=16k --size=64m --fsync=2
                                                any fiolike command line or job file
  csumhist stat --profile oltp                  the XFS stat block of the run, decoded
  csumhist bench --plot crc.svg --json -        engine throughput by size

Every run makes labfs afresh on the device (--device, default mem:1g), with the -o options,
the checksum mode set by --cksum.";

/// csumhist's command line.
#[derive(Debug, Parser)]
#[command(
    name = "csumhist",
    about = "crc32c call-size histograms per structure, single vs split checksum updates, \
             and CRC throughput by size for each engine (thread 004)",
    after_help = AFTER_HELP
)]
pub struct CsumhistArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: CsumCommand,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum CsumCommand {
    /// Run a workload on labfs and histogram the sizes passed to crc32c.
    Run(RunArgs),
    /// Run a workload on labfs and print its XFS statistics, raw and decoded.
    Stat(StatArgs),
    /// Measure each CRC engine's throughput by buffer size.
    Bench(BenchArgs),
}

/// Which update methods to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CksumChoice {
    /// One mode.
    One(CksumMode),
    /// Single, then split, compared side by side.
    Both,
}

impl CksumChoice {
    /// The modes to run, in order.
    pub fn modes(self) -> Vec<CksumMode> {
        match self {
            CksumChoice::One(m) => vec![m],
            CksumChoice::Both => vec![CksumMode::Single, CksumMode::Split],
        }
    }
}

impl FromStr for CksumChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "both" => Ok(CksumChoice::Both),
            _ => s
                .parse::<CksumMode>()
                .map(CksumChoice::One)
                .map_err(|_| format!("'{s}' is not single, split or both")),
        }
    }
}

fn parse_profile(s: &str) -> Result<Profile, String> {
    Profile::from_name(s).ok_or_else(|| {
        let names: Vec<_> = Profile::ALL.iter().map(|p| p.name()).collect();
        format!("unknown profile '{s}' (expected {})", names.join(" or "))
    })
}

fn parse_bytes(s: &str) -> Result<u64, String> {
    parse_size(s).map_err(|e| e.to_string())
}

fn parse_time(s: &str) -> Result<Duration, String> {
    parse_duration(s).map_err(|e| e.to_string())
}

/// The workload and the filesystem it runs on.
#[derive(Debug, Args)]
pub struct WorkloadArgs {
    /// Built-in workload: fsmark-s1 (small files, fsync each, kept: fsmark -n 1000 -s 4096 -S 1 -k) or
    /// oltp (16 KiB random writes in four 16 MiB files, fsync every 2, a temporary file
    /// created and removed every 16). Default fsmark-s1 unless a command line follows `--`.
    #[arg(long, value_name = "NAME", value_parser = parse_profile)]
    pub profile: Option<Profile>,
    /// Size of the profile: files for fsmark-s1, random writes for oltp.
    #[arg(long, value_name = "N")]
    pub ops: Option<u64>,
    /// Backend flags (labfs only).
    #[command(flatten)]
    pub backend: BackendArgs,
    /// A command line to run instead of a profile (everything after `--`): fiolike's (starting
    /// with the word `fiolike`: job options and job files) or fsmark's (a leading `fsmark` is
    /// allowed). Its fs_mark or fio report is not written.
    #[arg(last = true, value_name = "fsmark ARGS | fiolike ARGS")]
    pub line: Vec<String>,
}

/// `csumhist run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The workload.
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Checksum update method: single (zero the field, one pass: XFS since 4.10), split
    /// (head, zeroed field, tail: XFS before), or both, run one after the other and compared.
    #[arg(long, value_name = "single|split|both", default_value = "both")]
    pub cksum: CksumChoice,
    /// Which checksum calls the tables count: update (what --cksum changes), verify (blocks
    /// read back), all.
    #[arg(long, value_name = "update|verify|all", default_value = "update")]
    pub calls: CallFilter,
    /// crc32c calls under this many bytes count as small (a power of two; 512: below it no
    /// vectorised crc32c broke even in the thread).
    #[arg(long, value_name = "BYTES", default_value = "512", value_parser = parse_bytes)]
    pub small_below: u64,
    /// Also write the figures as JSON to FILE (`-`: stdout, instead of the tables).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// `csumhist stat`.
#[derive(Debug, Args)]
pub struct StatArgs {
    /// The workload.
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Checksum update method of the run: single or split.
    #[arg(long, value_name = "single|split", default_value = "single")]
    pub cksum: CksumMode,
}

/// `csumhist bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// About how long one measurement (one engine at one size) runs.
    #[arg(long, value_name = "DURATION", default_value = "10ms", value_parser = parse_time)]
    pub time: Duration,
    /// Measurements per engine and size; the fastest counts.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub rounds: u32,
    /// Also write the figures as JSON to FILE (`-`: stdout, instead of the tables).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Draw GB/s against size for each engine into an SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
}

/// A command line csumhist refuses (exit 2).
#[derive(Debug, Error)]
pub enum UsageError {
    /// The backend flags do not combine.
    #[error(transparent)]
    Backend(#[from] BackendArgsError),
    /// `--fs host`.
    #[error("--fs host: csumhist counts labfs's checksum calls, so it runs on labfs only")]
    HostFs,
    /// `--profile` and a command line together.
    #[error("--profile {0} and a command line after -- are two workloads; give one")]
    TwoWorkloads(&'static str),
    /// `--ops` with a command line.
    #[error("--ops sizes a profile; a command line after -- sizes itself (fsmark -n, fio size=)")]
    OpsWithLine,
    /// The fiolike command line did not parse.
    #[error("fiolike command line: {}", first_line(.0))]
    FioLine(CmdlineError),
    /// The fiolike jobs could not be built.
    #[error("fiolike command line: {}", first_line(.0))]
    FioJobs(JobSetError),
    /// The fiolike command line carries output switches or asks for no run.
    #[error(
        "fiolike command line: no --output, --output-format, --minimal, --status-interval, --parse-only, --help or --version (csumhist prints its own report)"
    )]
    FioSwitches,
    /// The profile cannot take `--ops`.
    #[error(transparent)]
    Ops(#[from] OpsError),
    /// The fsmark command line did not parse.
    #[error("fsmark command line: {}", usage_error_line::<FsmarkArgs>(.0))]
    FsmarkLine(clap::Error),
    /// The fsmark command line parsed but fs_mark would refuse it.
    #[error("fsmark command line: {0}")]
    FsmarkConfig(#[from] ConfigError),
    /// The fsmark command line carries backend flags, which are csumhist's.
    #[error(
        "fsmark command line: give --fs, --device, -o and --mkfs to csumhist itself, before --"
    )]
    FsmarkBackendFlags,
    /// The fsmark command line carries --trace/--stats flags.
    #[error(
        "fsmark command line: no --trace or --stats flags (csumhist traces the run itself; csumhist stat prints its statistics)"
    )]
    FsmarkObserveFlags,
    /// `--small-below` is not a power of two.
    #[error("--small-below: {0}")]
    Threshold(#[from] BadThreshold),
    /// `--rounds 0`.
    #[error("--rounds 0: at least one measurement per size")]
    NoRounds,
    /// `--time 0`.
    #[error("--time 0: measurements need some time")]
    NoTime,
}

/// The first line of fio's message (fio adds hints on lines of their own; csumhist refuses
/// in one line).
fn first_line(e: &dyn std::fmt::Display) -> String {
    let text = e.to_string();
    text.lines().next().unwrap_or_default().to_string()
}

/// A failed csumhist run (exit 1).
#[derive(Debug, Error)]
pub enum RunError {
    /// An output file could not be created.
    #[error(transparent)]
    Output(#[from] OutputError),
    /// The measurement failed.
    #[error(transparent)]
    Measure(#[from] CsumError),
    /// Writing the report failed.
    #[error("writing {what}: {source}")]
    Write {
        /// What was being written.
        what: String,
        /// The error.
        source: std::io::Error,
    },
    /// The plot could not be drawn.
    #[error(transparent)]
    Plot(#[from] PlotError),
}

impl RunError {
    fn is_broken_pipe(&self) -> bool {
        matches!(self, RunError::Write { source, .. } if source.kind() == std::io::ErrorKind::BrokenPipe)
    }
}

/// A workload ready to measure, with the labfs it runs on.
struct Job {
    lab: LabConfig,
    workload: Workload,
}

fn job(args: WorkloadArgs) -> Result<Job, UsageError> {
    if args.backend.fs == FsKind::Host {
        return Err(UsageError::HostFs);
    }
    let BackendConfig::Lab(lab) = args.backend.to_config()? else {
        return Err(UsageError::HostFs);
    };
    let workload = if args.line.is_empty() {
        args.profile
            .unwrap_or(Profile::FsmarkS1)
            .workload(args.ops)?
    } else {
        if let Some(p) = args.profile {
            return Err(UsageError::TwoWorkloads(p.name()));
        }
        if args.ops.is_some() {
            return Err(UsageError::OpsWithLine);
        }
        match args.line.first().map(String::as_str) {
            Some("fiolike") => fio_workload(&args.line[1..])?,
            _ => fsmark_workload(&args.line)?,
        }
    };
    Ok(Job { lab, workload })
}

/// The shared flag groups as clap fills them when none is given (their clap defaults, which
/// `Default` does not know).
#[derive(Debug, Parser)]
struct SharedFlags {
    #[command(flatten)]
    backend: BackendArgs,
    #[command(flatten)]
    observe: super::observe::ObserveArgs,
}

impl SharedFlags {
    fn unset() -> SharedFlags {
        SharedFlags::parse_from(["fsmark"])
    }
}

/// Parse an fsmark command line with fsmark's own parser.
fn fsmark_workload(line: &[String]) -> Result<Workload, UsageError> {
    let rest = match line.first().map(String::as_str) {
        Some("fsmark") => &line[1..],
        _ => line,
    };
    let argv = std::iter::once("fsmark".to_string()).chain(rest.iter().cloned());
    let args = FsmarkArgs::try_parse_from(argv).map_err(UsageError::FsmarkLine)?;
    let unset = SharedFlags::unset();
    if args.backend != unset.backend {
        return Err(UsageError::FsmarkBackendFlags);
    }
    if args.observe != unset.observe {
        return Err(UsageError::FsmarkObserveFlags);
    }
    let (config, _report) = args.to_config()?;
    let command = format!("fsmark {}", rest.join(" "));
    Ok(Workload::Fsmark { config, command })
}

/// Parse a fiolike command line (after the word `fiolike`) and build its jobs as fiolike does;
/// fiolike's own output switches are refused (csumhist reports checksums, not fio's figures).
fn fio_workload(args: &[String]) -> Result<Workload, UsageError> {
    let cl = cmdline::parse(args).map_err(UsageError::FioLine)?;
    if cl.action != Action::Run || cl.switches.parse_only {
        return Err(UsageError::FioSwitches);
    }
    let unset = Switches {
        sections: cl.switches.sections.clone(),
        eta: cl.switches.eta,
        ..Switches::default()
    };
    if cl.switches != unset {
        return Err(UsageError::FioSwitches);
    }
    let jobs = jobset::build(&cl, &FsReader, &ProcessEnv, Keywords::of_this_machine())
        .map_err(UsageError::FioJobs)?;
    let command = format!("fiolike {}", args.join(" "));
    Ok(Workload::Fio { jobs, command })
}

/// Where a report goes: a file opened before the run, or stdout.
enum Sink {
    Stdout,
    File(OutputFile),
}

fn sink(what: &'static str, path: &Option<PathBuf>) -> Result<Option<Sink>, OutputError> {
    match path {
        None => Ok(None),
        Some(p) if p.as_os_str() == "-" => Ok(Some(Sink::Stdout)),
        Some(p) => Ok(Some(Sink::File(OutputFile::create(what, p)?))),
    }
}

fn write_json(sink: Sink, doc: &serde_json::Value) -> Result<(), RunError> {
    let mut text = serde_json::to_string_pretty(doc).unwrap_or_else(|_| "null".to_string());
    text.push('\n');
    match sink {
        Sink::Stdout => write_stdout(&text),
        Sink::File(mut f) => f
            .file
            .write_all(text.as_bytes())
            .map_err(|source| RunError::Write {
                what: f.path.display().to_string(),
                source,
            }),
    }
}

fn write_stdout(text: &str) -> Result<(), RunError> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|source| RunError::Write {
            what: "stdout".into(),
            source,
        })
}

/// The bytes fio jobs will move: `io_size=` (else an absolute `size=`) times loops and
/// clones; 0 (the bar then shows only the count) when a job runs by time or sizes itself by
/// percentage.
fn planned_fio_bytes(jobs: &JobSet) -> u64 {
    jobs.jobs
        .iter()
        .map(|j| {
            let per_loop = match (j.spec.io_size, &j.spec.size) {
                _ if j.spec.time_based => 0,
                (Some(n), _) => n,
                (None, Some(SizeValue::Bytes(n))) => *n,
                (None, _) => 0,
            };
            per_loop
                .saturating_mul(u64::from(j.spec.loops))
                .saturating_mul(u64::from(j.spec.numjobs))
        })
        .fold(0u64, u64::saturating_add)
}

/// How many units (files, writes, bytes) a workload does, for the progress bar.
fn units(w: &Workload) -> (u64, &'static str) {
    match w {
        Workload::Fsmark { config, .. } => (
            u64::from(config.num_files)
                * u64::from(config.threads)
                * u64::from(config.iterations()),
            "files",
        ),
        Workload::Oltp(c) => (c.writes, "writes"),
        Workload::Fio { jobs, .. } => (planned_fio_bytes(jobs), "bytes"),
    }
}

/// Measure `job` once per mode; stops early (keeping what was measured) after Ctrl-C.
///
/// When modes are compared, one unreported warm-up run of the first mode comes first: the
/// first run in a process pays for growing the heap and faulting in code, and would read as
/// the slower mode.
fn measure_modes(
    job: &Job,
    modes: &[CksumMode],
    stop: &'static AtomicBool,
) -> Result<Vec<Measured>, RunError> {
    if let [first, _, ..] = modes {
        measure(
            &job.lab,
            *first,
            &job.workload,
            Some(stop),
            &LiveProgress::default(),
        )?;
    }
    let mut runs = Vec::with_capacity(modes.len());
    for &mode in modes {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let progress = Arc::new(LiveProgress::default());
        let (total, unit) = units(&job.workload);
        let ticker = Ticker::start_if_terminal(format!("cksum={mode}: {unit}"), total, {
            let p = Arc::clone(&progress);
            move || p.done()
        });
        let m = measure(&job.lab, mode, &job.workload, Some(stop), &progress);
        drop(ticker);
        runs.push(m?);
    }
    Ok(runs)
}

fn run_cmd(args: RunArgs, stop: &'static AtomicBool) -> Result<Result<(), RunError>, UsageError> {
    let small_below = SmallBelow::new(args.small_below)?;
    let (cksum, calls) = (args.cksum, args.calls);
    let json_path = args.json.clone();
    let job = job(args.workload)?;
    Ok((|| {
        let json = sink("--json file", &json_path)?;
        let runs = measure_modes(&job, &cksum.modes(), stop)?;
        let description = job.workload.describe();
        let view = RunView {
            workload: &description,
            filter: calls,
            small_below,
            runs: &runs,
        };
        let json_on_stdout = matches!(json, Some(Sink::Stdout));
        if !json_on_stdout {
            write_stdout(&text::run_report(&view))?;
        }
        if let Some(s) = json {
            write_json(s, &report_json::run_document(&view))?;
        }
        Ok(())
    })())
}

fn stat_cmd(args: StatArgs, stop: &'static AtomicBool) -> Result<Result<(), RunError>, UsageError> {
    let mode = args.cksum;
    let job = job(args.workload)?;
    Ok((|| {
        let runs = measure_modes(&job, &[mode], stop)?;
        for m in &runs {
            write_stdout(&text::stat_report(&job.workload.describe(), m))?;
        }
        Ok(())
    })())
}

fn bench_cmd(args: BenchArgs) -> Result<Result<(), RunError>, UsageError> {
    if args.rounds == 0 {
        return Err(UsageError::NoRounds);
    }
    if args.time.is_zero() {
        return Err(UsageError::NoTime);
    }
    let config = BenchConfig {
        target_time: args.time,
        rounds: args.rounds,
        ..BenchConfig::default()
    };
    Ok((|| {
        let json = sink("--json file", &args.json)?;
        // Create the plot file now, so a bad path fails before the measurements.
        if let Some(p) = &args.plot {
            OutputFile::create("--plot file", p)?;
        }
        let done = Arc::new(AtomicU64::new(0));
        let ticker = Ticker::start_if_terminal("sizes".into(), config.sizes.len() as u64, {
            let d = Arc::clone(&done);
            move || d.load(Ordering::Relaxed)
        });
        let report = run_bench(&config, &mut |n, _| done.store(n as u64, Ordering::Relaxed));
        drop(ticker);
        if let Some(p) = &args.plot {
            plot::write_svg(&report, Path::new(p), 1000, 600)?;
        }
        let json_on_stdout = matches!(json, Some(Sink::Stdout));
        if !json_on_stdout {
            write_stdout(&text::bench_report(&report))?;
        }
        if let Some(s) = json {
            write_json(s, &report_json::bench_document(&report))?;
        }
        Ok(())
    })())
}

/// Run csumhist on `argv` (program name first) and return the exit status.
pub fn run(argv: Vec<OsString>) -> ExitStatus {
    let args = match parse::<CsumhistArgs>(NAME, argv) {
        Ok(a) => a,
        Err(status) => return status,
    };
    let stop = interrupt::install(NAME);
    let result = match args.command {
        CsumCommand::Run(a) => run_cmd(a, stop),
        CsumCommand::Stat(a) => stat_cmd(a, stop),
        CsumCommand::Bench(a) => bench_cmd(a),
    };
    match result {
        Err(usage) => {
            eprintln!("{NAME}: {usage}");
            ExitStatus::Usage
        }
        Ok(Ok(())) => ExitStatus::Ok,
        Ok(Err(e)) if e.is_broken_pipe() => ExitStatus::Ok,
        Ok(Err(e)) => {
            let _ = std::io::stdout().flush();
            eprintln!("{NAME}: {e}");
            ExitStatus::Failure
        }
    }
}

/// The binary's `main`: run on the process's arguments.
pub fn main() -> std::process::ExitCode {
    run(std::env::args_os().collect()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_ok(args: &[&str]) -> CsumhistArgs {
        let argv = std::iter::once("csumhist").chain(args.iter().copied());
        CsumhistArgs::try_parse_from(argv).expect("parses")
    }

    fn run_args(args: &[&str]) -> RunArgs {
        match parse_ok(args).command {
            CsumCommand::Run(r) => r,
            other => panic!("not run: {other:?}"),
        }
    }

    #[test]
    fn defaults_are_fsmark_s1_both_modes_updates_512() {
        let r = run_args(&["run"]);
        assert_eq!(r.cksum, CksumChoice::Both);
        assert_eq!(r.calls, CallFilter::Updates);
        assert_eq!(r.small_below, 512);
        let j = job(r.workload).expect("job");
        assert!(j.workload.describe().contains("-n 1000 -s 4096 -S 1 -k"));
        assert_eq!(
            CksumChoice::Both.modes(),
            vec![CksumMode::Single, CksumMode::Split]
        );
    }

    #[test]
    fn an_fsmark_line_after_the_separator_is_the_workload() {
        let r = run_args(&[
            "run", "--cksum", "split", "--", "fsmark", "-d", "/x", "-n", "7", "-S", "0",
        ]);
        assert_eq!(r.cksum, CksumChoice::One(CksumMode::Split));
        let j = job(r.workload).expect("job");
        let Workload::Fsmark { config, command } = j.workload else {
            panic!("fsmark")
        };
        assert_eq!(config.num_files, 7);
        assert_eq!(config.dirs, vec![PathBuf::from("/x")]);
        assert_eq!(command, "fsmark -d /x -n 7 -S 0");
    }

    #[test]
    fn refusals_name_the_problem() {
        let refuse = |args: &[&str]| {
            job(run_args(args).workload)
                .err()
                .expect("refused")
                .to_string()
        };
        assert!(refuse(&["run", "--fs", "host"]).contains("labfs only"));
        assert!(refuse(&["run", "--profile", "oltp", "--", "-d", "/x"]).contains("two workloads"));
        assert!(refuse(&["run", "--ops", "5", "--", "-d", "/x"]).contains("--ops"));
        assert!(refuse(&["run", "--", "-d", "/x", "-n", "0"]).contains("-n 0"));
        assert!(refuse(&["run", "--", "-d", "/x", "--device", "mem:64m"]).contains("before --"));
        assert!(refuse(&["run", "--", "-d", "/x", "--bogus"]).contains("fsmark command line"));
        assert!(refuse(&["run", "--profile", "fsmark-s1", "--ops", "0"]).contains("--ops 0"));
        assert!("sideways".parse::<CksumChoice>().is_err());
        assert!(
            parse_profile("tpcc")
                .unwrap_err()
                .contains("fsmark-s1 or oltp")
        );
    }
}
