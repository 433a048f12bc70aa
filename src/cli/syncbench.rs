//! `syncbench`: the cost of `sync()` against the size of the inode cache (thread 002).
//!
//! - `sweep`: fill the cache in steps and time clean syncs at each step, both `sync_wait`
//!   modes on labfs (`sync(2)` and `syncfs(2)` with `--fs host -d DIR`); a comfy-table table,
//!   `--json`, `--csv`, `--plot FILE.svg`, a progress bar on a terminal.
//! - `fsmark`: thread 002's fs_mark experiment (`-S4`, many loops, files kept) in both
//!   `sync_wait` modes on one labfs, the two fs_mark tables side by side, `--plot` of
//!   files/sec against files created; on the host one run, the kernel's.
//!
//! The command runs through the tool skeleton ([`super::tool`]), so `--fs`, `--device`,
//! `-o`, `--stats` and `--trace` (e.g. `--trace 'sb_*_inode_writeback'`) behave as in every
//! fslab binary. On labfs the sweep sizes what the user left at its default for the cache it
//! is asked to build ([`Command::backend_config`]): the inode cache limit (`icache`), and the
//! memory device.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, Parser, Subcommand};
use thiserror::Error;

use super::backend_args::{BackendArgs, FsKind};
use super::fsmark::args::FsmarkArgs;
use super::observe::{ObserveArgs, ObserveError};
use super::tool::{self, Command, Outcome, RunContext, SharedArgs, usage_error_line};
use crate::backend::open::BackendConfig;
use crate::fs::dev::spec::{DeviceSpec, MemSpec};
use crate::report::output::{OutputError, OutputFile};
use crate::report::progress::{Position, Ticker};
use crate::report::syncbench::{self as report, plot, rates};
use crate::workload::fsmark::{Config, ConfigError};
use crate::workload::syncbench::SyncbenchError;
use crate::workload::syncbench::degrade::{self, DegradeConfig};
use crate::workload::syncbench::populate::{Populate, Tree};
use crate::workload::syncbench::sweep::{self, Subject, SweepConfig, SweepEnv, SweepProgress};

const AFTER_HELP: &str = "\
Examples:
  syncbench sweep --max-inodes 1000000                 labfs, 5 steps from 10,000 to 1M inodes
  syncbench sweep --max-inodes 10000000 --steps 6 --json - --plot sync.svg
  syncbench sweep --fs host -d /mnt/xfs/sb --max-inodes 2000000    real sync(2)/syncfs(2)
  syncbench sweep --populate stat --device file:/dev/shm/sb.img,size=8g --max-inodes 1000000
  syncbench sweep --max-inodes 100000 --trace 'sb_*_inode_writeback'

On labfs the two ways are the sync_wait modes, timed on one mount: wblist waits on the
writeback list only; all walks every cached inode (the kernel before the writeback list).
With --fs host they are syncfs(2) of DIR's filesystem and sync(2), and the cached-inode
column is that filesystem's inode slab from /proc/slabinfo (when readable).
The tree (DIR/dNNNNN/fNNNNNNNN, 10,000 files a directory) stays after the run.";

/// syncbench's command line.
#[derive(Debug, Parser)]
#[command(
    name = "syncbench",
    about = "The cost of sync() against inode-cache size, with and without the writeback list \
             (thread 002), on labfs or on the host",
    after_help = AFTER_HELP
)]
pub struct SyncbenchArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: SyncbenchCommand,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum SyncbenchCommand {
    /// Fill the inode cache in steps and time clean syncs at each step, both ways.
    Sweep(SweepArgs),
    /// Thread 002's fs_mark experiment: -S4 over many loops while the cache grows, in both
    /// sync_wait modes, the two fs_mark tables side by side.
    Fsmark(FsmarkModeArgs),
}

/// The fs_mark line the fsmark mode runs by default: thread 002's (16 directories, -D 1000
/// -S4 -n 1000 -L 32), with empty files so 512,000 of them fit a memory device twice.
pub const DEFAULT_FSMARK_LINE: &str = "-D 1000 -S 4 -n 1000 -s 0 -L 32";

/// The default line's directories.
const DEFAULT_FSMARK_DIRS: u32 = 16;

/// `syncbench fsmark`.
#[derive(Debug, Args)]
pub struct FsmarkModeArgs {
    /// Files stat-ed into the cache before each mode's run (labfs), so both runs start with
    /// the same large cache; 0: start empty.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub preload: u64,
    /// Threads building and stat-ing the preload tree (default: the machine's CPUs).
    #[arg(long, value_name = "N")]
    pub preload_threads: Option<u32>,
    /// Draw files/sec against files created for each mode into FILE (SVG).
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Backend flags.
    #[command(flatten)]
    pub backend: BackendArgs,
    /// Statistics and tracing.
    #[command(flatten)]
    pub observe: ObserveArgs,
    /// The fsmark command line to run (everything after `--`; a leading `fsmark` is
    /// allowed). Default: -d /sbfs/0 ... -d /sbfs/15 -D 1000 -S 4 -n 1000 -s 0 -L 32. On
    /// labfs each mode runs in its own copy of the directories, under /all and /wblist.
    #[arg(last = true, value_name = "FSMARK ARGS")]
    pub fsmark: Vec<String>,
}

/// `syncbench sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Directory the tree is made in (default /syncbench on labfs; required with --fs host).
    #[arg(short = 'd', long = "dir", value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Inodes in the cache at the last step.
    #[arg(long, value_name = "N")]
    pub max_inodes: u64,
    /// Inodes at the first step (default: --max-inodes / 100, at least 1).
    #[arg(long, value_name = "N")]
    pub min_inodes: Option<u64>,
    /// Steps, spaced evenly on a log scale from --min-inodes to --max-inodes.
    #[arg(long, value_name = "K", default_value_t = 5)]
    pub steps: u32,
    /// Timed syncs per way at each step (min, median and max are reported).
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub syncs: u32,
    /// Threads filling the cache (default: the machine's CPUs).
    #[arg(short = 't', long, value_name = "N")]
    pub threads: Option<u32>,
    /// How the cache is filled: create (new empty files) or stat (look up the files of a
    /// tree an earlier run made, like a parallel find; a missing tree is built first and,
    /// on labfs, evicted from the cache before the sweep).
    #[arg(long, value_name = "create|stat", default_value = "create")]
    pub populate: Populate,
    /// Write the sweep as JSON to FILE (`-`: stdout, instead of the table); rewritten after
    /// every step.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the sweep as CSV to FILE (`-`: stdout, instead of the table).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Draw median sync time against cached inodes for both ways into FILE (SVG).
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Backend flags.
    #[command(flatten)]
    pub backend: BackendArgs,
    /// Statistics and tracing.
    #[command(flatten)]
    pub observe: ObserveArgs,
}

impl SharedArgs for SyncbenchArgs {
    fn backend(&self) -> &BackendArgs {
        match &self.command {
            SyncbenchCommand::Sweep(a) => &a.backend,
            SyncbenchCommand::Fsmark(a) => &a.backend,
        }
    }
    fn observe(&self) -> &ObserveArgs {
        match &self.command {
            SyncbenchCommand::Sweep(a) => &a.observe,
            SyncbenchCommand::Fsmark(a) => &a.observe,
        }
    }
}

/// A command line syncbench refuses.
#[derive(Debug, Error)]
pub enum UsageError {
    /// `--max-inodes 0`.
    #[error("--max-inodes 0: nothing to cache")]
    NoInodes,
    /// `--min-inodes` above `--max-inodes`.
    #[error("--min-inodes {min} is above --max-inodes {max}")]
    MinAboveMax {
        /// --min-inodes.
        min: u64,
        /// --max-inodes.
        max: u64,
    },
    /// A count that must be positive is 0.
    #[error("{0} 0: must be at least 1")]
    Zero(&'static str),
    /// `--fs host` without `-d`.
    #[error("--fs host needs -d DIR (a directory on the filesystem to measure)")]
    HostNeedsDir,
    /// JSON and CSV both to stdout.
    #[error("--json - and --csv - both want stdout; send one to a file")]
    BothToStdout,
    /// The fsmark command line did not parse.
    #[error("fsmark command line: {}", usage_error_line::<FsmarkArgs>(.0))]
    FsmarkLine(clap::Error),
    /// The fsmark command line parsed but fs_mark would refuse it.
    #[error("fsmark command line: {0}")]
    FsmarkConfig(#[from] ConfigError),
    /// The fsmark command line carries flags that are syncbench's own.
    #[error(
        "fsmark command line: give --fs, --device, -o, --mkfs, --trace and --stats to syncbench itself, before --"
    )]
    FsmarkSharedFlags,
    /// The fsmark line does not sync, so there is nothing to compare.
    #[error("fsmark command line: -S {0} makes no sync() call; the experiment needs -S 2, 4 or 6")]
    FsmarkNoSync(u32),
    /// A relative `-d` on labfs.
    #[error("-d {0}: labfs paths are absolute (e.g. /syncbench)")]
    RelativeLabDir(String),
}

/// Where a report goes: stdout or a file named on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Dest {
    Stdout,
    File(PathBuf),
}

impl Dest {
    fn of(p: &Option<PathBuf>) -> Option<Dest> {
        p.as_ref().map(|p| {
            if p.as_os_str() == "-" {
                Dest::Stdout
            } else {
                Dest::File(p.clone())
            }
        })
    }
}

/// A validated sweep.
#[derive(Debug)]
pub struct Sweep {
    config: SweepConfig,
    host: bool,
    device_given: bool,
    json: Option<Dest>,
    csv: Option<Dest>,
    plot: Option<PathBuf>,
}

/// The files a run writes as it goes, created before it (the JSON and plot files are
/// created then too, and rewritten whole later).
#[derive(Debug)]
pub struct Outputs {
    /// The sweep's `--csv FILE`.
    csv: Option<OutputFile>,
}

/// Why a syncbench run failed.
#[derive(Debug, Error)]
pub enum RunError {
    /// The engine failed (populating, syncing, a report file rewritten as it went).
    #[error(transparent)]
    Engine(#[from] SyncbenchError),
    /// The plot could not be drawn.
    #[error(transparent)]
    Plot(#[from] plot::PlotError),
    /// A report could not be written.
    #[error("writing {what}: {source}")]
    Write {
        /// stdout or the file.
        what: String,
        /// Why.
        source: std::io::Error,
    },
    /// Statistics could not be read.
    #[error(transparent)]
    Observe(#[from] ObserveError),
}

impl RunError {
    /// Whether this only says that stdout's reader went away.
    pub fn is_broken_pipe(&self) -> bool {
        match self {
            RunError::Engine(e) => e.is_broken_pipe(),
            RunError::Write { source, .. } => source.kind() == std::io::ErrorKind::BrokenPipe,
            RunError::Plot(_) | RunError::Observe(_) => false,
        }
    }
}

/// syncbench's commands, validated.
#[derive(Debug)]
pub enum Syncbench {
    /// `sweep`.
    Sweep(Sweep),
    /// `fsmark`.
    Fsmark(FsmarkMode),
}

/// A validated fsmark-mode run.
#[derive(Debug)]
pub struct FsmarkMode {
    config: DegradeConfig,
    plot: Option<PathBuf>,
    /// Whether `--device` was given (else the memory device is sized for the files).
    device_given: bool,
}

/// Parse the fsmark line with fsmark's own parser (the default line when empty).
fn fsmark_config(line: &[String]) -> Result<Config, UsageError> {
    let rest: Vec<String> = match line.first().map(String::as_str) {
        None => {
            let mut v: Vec<String> = (0..DEFAULT_FSMARK_DIRS)
                .flat_map(|i| ["-d".to_string(), format!("/sbfs/{i}")])
                .collect();
            v.extend(DEFAULT_FSMARK_LINE.split(' ').map(String::from));
            v
        }
        Some("fsmark") => line[1..].to_vec(),
        Some(_) => line.to_vec(),
    };
    let argv = std::iter::once("fsmark".to_string()).chain(rest);
    let args = FsmarkArgs::try_parse_from(argv).map_err(UsageError::FsmarkLine)?;
    let unset =
        FsmarkArgs::try_parse_from(["fsmark", "-d", "/x"]).map_err(UsageError::FsmarkLine)?;
    if args.backend != unset.backend || args.observe != unset.observe {
        return Err(UsageError::FsmarkSharedFlags);
    }
    let (config, _report) = args.to_config()?;
    if !config.sync.phases().sync_syscall {
        return Err(UsageError::FsmarkNoSync(config.sync.number()));
    }
    Ok(config)
}

/// Make labfs hold `files` files: an inode cache of at least `icache` inodes, and unless
/// the user chose the device, a memory device sized for them (512-byte inodes plus directory
/// blocks and the log; it only holds what is written, so the headroom costs nothing).
fn fit_lab_to(
    lab: &mut crate::backend::open::LabConfig,
    files: u64,
    icache: usize,
    device_given: bool,
) {
    if lab.options.mount.icache_limit < icache {
        lab.options.mount.icache_limit = icache;
    }
    if !device_given {
        let bytes = files.saturating_mul(1536).max(1 << 30).next_power_of_two();
        lab.device = DeviceSpec::Mem(MemSpec {
            size: bytes,
            ..MemSpec::default()
        });
    }
}

impl FsmarkMode {
    fn new(a: FsmarkModeArgs) -> Result<FsmarkMode, UsageError> {
        let fsmark = fsmark_config(&a.fsmark)?;
        if a.preload_threads == Some(0) {
            return Err(UsageError::Zero("--preload-threads"));
        }
        Ok(FsmarkMode {
            config: DegradeConfig {
                fsmark,
                preload: a.preload,
                preload_dir: PathBuf::from("/preload"),
                threads: a.preload_threads.unwrap_or_else(|| {
                    std::thread::available_parallelism().map_or(2, |n| n.get() as u32)
                }),
            },
            plot: a.plot,
            device_given: a.backend.device.is_some(),
        })
    }

    fn backend_config(&self, mut config: BackendConfig) -> BackendConfig {
        if let BackendConfig::Lab(lab) = &mut config {
            // Both runs' files and the preload stay cached: no reclaim during the experiment.
            let c = &self.config.fsmark;
            let files =
                u64::from(c.num_files) * u64::from(c.threads) * u64::from(c.iterations()) * 2
                    + self.config.preload;
            let want = usize::try_from(files * 2 + 100_000).unwrap_or(usize::MAX);
            fit_lab_to(lab, files, want, self.device_given);
        }
        config
    }

    fn run(self, ctx: RunContext<'_>) -> Result<Outcome, RunError> {
        let target = ctx.backend.target();
        let lab = ctx.backend.lab().map(|l| Arc::clone(l.fs()));
        ctx.observer.loop_started(1)?;
        let mut on_loop = |_: &'static str, _: &_| {};
        let runs = degrade::run(target, lab, &self.config, Some(ctx.interrupt), &mut on_loop)?;
        ctx.observer.loop_finished(1)?;
        let text = format!(
            "# syncbench fsmark on {}\n# fsmark {}\n\n{}\n{}",
            ctx.backend.describe(),
            describe_line(&self.config.fsmark),
            rates::side_by_side(&runs, self.config.fsmark.file_size),
            rates::trend(&runs)
        );
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes())
            .and_then(|()| out.flush())
            .map_err(|e| write_error("stdout", e))?;
        if let Some(p) = &self.plot {
            let series: Vec<plot::Series<'_>> = runs
                .iter()
                .map(|r| plot::Series {
                    label: r.mode,
                    points: r
                        .rows
                        .iter()
                        .map(|row| {
                            (
                                row.report.count as f64,
                                row.report.stats.rate_tenths as f64 / 10.0,
                            )
                        })
                        .collect(),
                })
                .collect();
            plot::rate_svg(&series, p)?;
        }
        let complete =
            runs.len() == if ctx.backend.lab().is_some() { 2 } else { 1 } && !ctx.stop_requested();
        Ok(if complete {
            Outcome::Completed
        } else {
            Outcome::Interrupted
        })
    }
}

/// The fsmark line's shape in fs_mark's flags (for the header).
fn describe_line(c: &Config) -> String {
    format!(
        "{} directories, -t {} -n {} -s {} -S {} -L {}",
        c.dirs.len(),
        c.threads,
        c.num_files,
        c.file_size,
        c.sync.number(),
        c.iterations()
    )
}

impl Sweep {
    fn new(a: SweepArgs) -> Result<Sweep, UsageError> {
        if a.max_inodes == 0 {
            return Err(UsageError::NoInodes);
        }
        for (flag, v) in [("--steps", a.steps), ("--syncs", a.syncs)] {
            if v == 0 {
                return Err(UsageError::Zero(flag));
            }
        }
        if a.threads == Some(0) {
            return Err(UsageError::Zero("-t"));
        }
        let min = a.min_inodes.unwrap_or((a.max_inodes / 100).max(1));
        if min > a.max_inodes {
            return Err(UsageError::MinAboveMax {
                min,
                max: a.max_inodes,
            });
        }
        let host = a.backend.fs == FsKind::Host;
        let dir = match (a.dir, host) {
            (Some(d), _) => d,
            (None, true) => return Err(UsageError::HostNeedsDir),
            (None, false) => PathBuf::from("/syncbench"),
        };
        if !host && !dir.is_absolute() {
            return Err(UsageError::RelativeLabDir(dir.display().to_string()));
        }
        let json = Dest::of(&a.json);
        let csv = Dest::of(&a.csv);
        if json == Some(Dest::Stdout) && csv == Some(Dest::Stdout) {
            return Err(UsageError::BothToStdout);
        }
        let threads = a
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get() as u32));
        Ok(Sweep {
            config: SweepConfig {
                dir,
                steps: sweep::step_sizes(min, a.max_inodes, a.steps),
                syncs: a.syncs,
                threads,
                populate: a.populate,
            },
            host,
            device_given: a.backend.device.is_some(),
            json,
            csv,
            plot: a.plot,
        })
    }

    fn max_inodes(&self) -> u64 {
        self.config.steps.last().copied().unwrap_or(0)
    }

    fn backend_config(&self, mut config: BackendConfig) -> BackendConfig {
        let BackendConfig::Lab(lab) = &mut config else {
            return config;
        };
        let files = self.max_inodes();
        // Every file, its directories, and room for reclaim's slack.
        let want = files + Tree::dirs_for(files) + 1024;
        fit_lab_to(
            lab,
            files,
            usize::try_from(want).unwrap_or(usize::MAX),
            self.device_given,
        );
        config
    }

    fn open_outputs(&self) -> Result<Outputs, OutputError> {
        if let Some(Dest::File(p)) = &self.json {
            OutputFile::create("--json file", p)?;
        }
        let csv = match &self.csv {
            Some(Dest::File(p)) => Some(OutputFile::create("--csv file", p)?),
            _ => None,
        };
        if let Some(p) = &self.plot {
            OutputFile::create("--plot file", p)?;
        }
        Ok(Outputs { csv })
    }

    fn run(self, outputs: Outputs, ctx: RunContext<'_>) -> Result<Outcome, RunError> {
        let target = ctx.backend.target();
        let subject = match ctx.backend.lab() {
            Some(lab) => Subject::Lab(Arc::clone(lab.fs())),
            None => Subject::Host,
        };
        let progress = Arc::new(SweepProgress::default());
        let ticker = {
            let p = Arc::clone(&progress);
            let how = self.config.populate;
            Ticker::start_phased_if_terminal("sweep".to_string(), move || Position {
                phase: p.phase(how),
                done: p.done.load(std::sync::atomic::Ordering::Relaxed),
                total: p.total.load(std::sync::atomic::Ordering::Relaxed),
            })
        };
        let env = SweepEnv {
            target: target.as_ref(),
            subject,
            backend: ctx.backend.describe(),
            progress: &progress,
            interrupt: Some(ctx.interrupt),
        };
        ctx.observer.loop_started(1)?;
        let json_file = match &self.json {
            Some(Dest::File(p)) => Some(p.clone()),
            _ => None,
        };
        let result = sweep::run(&env, &self.config, |r| {
            if let Some(p) = &json_file {
                crate::report::json::write_atomic(p, &report::sweep_json(r)).map_err(|source| {
                    SyncbenchError::Output {
                        what: p.display().to_string(),
                        source,
                    }
                })?;
            }
            Ok(())
        });
        if let Some(t) = ticker {
            t.stop();
        }
        let r = result?;
        ctx.observer.loop_finished(1)?;
        let mut out = std::io::stdout().lock();
        let stdout_err = |e| write_error("stdout", e);
        match (&self.json, &self.csv) {
            (Some(Dest::Stdout), _) => {
                let mut text = serde_json::to_string_pretty(&report::sweep_json(&r))
                    .unwrap_or_else(|_| "null".into());
                text.push('\n');
                out.write_all(text.as_bytes()).map_err(stdout_err)?;
            }
            (_, Some(Dest::Stdout)) => {
                out.write_all(report::sweep_csv(&r).as_bytes())
                    .map_err(stdout_err)?;
            }
            _ => {
                let text = format!(
                    "{}{}\n{}",
                    report::sweep_header(&r),
                    report::sweep_table(&r),
                    report::sweep_footer(&r)
                );
                out.write_all(text.as_bytes()).map_err(stdout_err)?;
            }
        }
        out.flush().map_err(stdout_err)?;
        if let Some(mut f) = outputs.csv {
            f.file
                .write_all(report::sweep_csv(&r).as_bytes())
                .map_err(|e| write_error(&f.path.display().to_string(), e))?;
        }
        if let Some(p) = &self.plot {
            plot::sweep_svg(&r, p)?;
        }
        Ok(if r.interrupted {
            Outcome::Interrupted
        } else {
            Outcome::Completed
        })
    }
}

fn write_error(what: &str, source: std::io::Error) -> RunError {
    RunError::Write {
        what: what.to_string(),
        source,
    }
}

impl Command for Syncbench {
    const NAME: &'static str = "syncbench";
    type Args = SyncbenchArgs;
    type UsageError = UsageError;
    type Outputs = Outputs;
    type Error = RunError;

    fn new(args: SyncbenchArgs, _argv: Vec<String>) -> Result<Syncbench, UsageError> {
        match args.command {
            SyncbenchCommand::Sweep(a) => Sweep::new(a).map(Syncbench::Sweep),
            SyncbenchCommand::Fsmark(a) => FsmarkMode::new(a).map(Syncbench::Fsmark),
        }
    }

    fn work_dirs(&self) -> Vec<PathBuf> {
        match self {
            Syncbench::Sweep(s) if !s.host => vec![s.config.dir.clone()],
            Syncbench::Sweep(_) => Vec::new(),
            // On labfs each mode's directories are made under its own root by the engine;
            // on the host they are the user's.
            Syncbench::Fsmark(_) => Vec::new(),
        }
    }

    fn backend_config(&self, config: BackendConfig) -> BackendConfig {
        match self {
            Syncbench::Sweep(s) => s.backend_config(config),
            Syncbench::Fsmark(f) => f.backend_config(config),
        }
    }

    fn open_outputs(&self) -> Result<Outputs, OutputError> {
        match self {
            Syncbench::Sweep(s) => s.open_outputs(),
            Syncbench::Fsmark(f) => {
                if let Some(p) = &f.plot {
                    OutputFile::create("--plot file", p)?;
                }
                Ok(Outputs { csv: None })
            }
        }
    }

    fn run(self, outputs: Outputs, ctx: RunContext<'_>) -> Result<Outcome, RunError> {
        match (self, outputs) {
            (Syncbench::Sweep(s), o) => s.run(o, ctx),
            (Syncbench::Fsmark(f), _) => f.run(ctx),
        }
    }

    fn is_broken_pipe(error: &RunError) -> bool {
        error.is_broken_pipe()
    }
}

/// The syncbench binary's whole `main`.
pub fn main() -> std::process::ExitCode {
    tool::main::<Syncbench>()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Syncbench, String> {
        let argv = std::iter::once("syncbench").chain(args.iter().copied());
        let a = SyncbenchArgs::try_parse_from(argv).map_err(|e| e.to_string())?;
        Syncbench::new(a, Vec::new()).map_err(|e| e.to_string())
    }

    #[test]
    fn sweep_defaults_and_steps() {
        let Ok(Syncbench::Sweep(s)) = parse(&["sweep", "--max-inodes", "1000000"]) else {
            panic!("a sweep")
        };
        assert_eq!(s.config.dir, PathBuf::from("/syncbench"));
        assert_eq!(s.config.steps.len(), 5);
        assert_eq!(s.config.steps.first(), Some(&10_000));
        assert_eq!(s.config.steps.last(), Some(&1_000_000));
        assert_eq!(s.config.syncs, 5);
    }

    #[test]
    fn refusals_name_the_flag() {
        for (args, words) in [
            (&["sweep", "--max-inodes", "0"][..], "--max-inodes 0"),
            (
                &["sweep", "--max-inodes", "10", "--steps", "0"][..],
                "--steps 0",
            ),
            (
                &["sweep", "--max-inodes", "10", "--min-inodes", "11"][..],
                "above",
            ),
            (
                &["sweep", "--max-inodes", "10", "--fs", "host"][..],
                "needs -d",
            ),
            (
                &["sweep", "--max-inodes", "10", "-d", "rel"][..],
                "absolute",
            ),
            (
                &["sweep", "--max-inodes", "10", "--json", "-", "--csv", "-"][..],
                "stdout",
            ),
            (
                &["sweep", "--max-inodes", "10", "--populate", "find"][..],
                "create or stat",
            ),
        ] {
            let e = parse(args).unwrap_err();
            assert!(e.contains(words), "{args:?}: {e}");
        }
    }

    #[test]
    fn labfs_is_sized_for_the_sweep_unless_the_user_chose() {
        let Ok(Syncbench::Sweep(s)) = parse(&["sweep", "--max-inodes", "5000000"]) else {
            panic!("a sweep")
        };
        let BackendConfig::Lab(lab) = s.backend_config(BackendConfig::default()) else {
            panic!("labfs")
        };
        assert!(lab.options.mount.icache_limit >= 5_000_000 + 500);
        assert!(matches!(lab.device, DeviceSpec::Mem(m) if m.size >= 5_000_000 * 1536));
        let Ok(Syncbench::Sweep(s)) =
            parse(&["sweep", "--max-inodes", "5000000", "--device", "mem:2g"])
        else {
            panic!("a sweep")
        };
        let mut given = crate::backend::open::LabConfig::new("mem:2g".parse().unwrap());
        given.options.mount.icache_limit = 100;
        let BackendConfig::Lab(lab) = s.backend_config(BackendConfig::Lab(given)) else {
            panic!("labfs")
        };
        assert_eq!(
            lab.device.to_string(),
            "mem:2g",
            "a device the user named stays"
        );
        assert!(lab.options.mount.icache_limit >= 5_000_000);
    }

    #[test]
    fn labfs_is_sized_for_the_preload_and_both_fsmark_runs() {
        // 2M preloaded plus 2 x 512,000 files: on the default 1 GiB device this ran out of
        // space while preloading.
        let Ok(Syncbench::Fsmark(f)) = parse(&["fsmark", "--preload", "2000000"]) else {
            panic!("the fsmark mode")
        };
        let BackendConfig::Lab(lab) = f.backend_config(BackendConfig::default()) else {
            panic!("labfs")
        };
        let files = 2_000_000 + 2 * 512_000;
        assert!(matches!(lab.device, DeviceSpec::Mem(m) if m.size >= files * 1536));
        assert!(lab.options.mount.icache_limit >= files as usize);
        let Ok(Syncbench::Fsmark(f)) =
            parse(&["fsmark", "--preload", "2000000", "--device", "mem:2g"])
        else {
            panic!("the fsmark mode")
        };
        let given = crate::backend::open::LabConfig::new("mem:2g".parse().unwrap());
        let BackendConfig::Lab(lab) = f.backend_config(BackendConfig::Lab(given)) else {
            panic!("labfs")
        };
        assert_eq!(
            lab.device.to_string(),
            "mem:2g",
            "a device the user named stays"
        );
    }
}
