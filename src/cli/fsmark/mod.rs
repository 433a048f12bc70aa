//! The fsmark command: fs_mark 3.3's command line ([`args`]) and the [`Fsmark`]
//! [`Command`] that runs the fs_mark engine ([`crate::workload::fsmark`]) with fs_mark's
//! text on stdout and in its log ([`crate::report::fsmark::Printer`]) and the XFS statistics
//! of each loop (the skeleton's [`Observer`]).
//!
//! `--stats-compare FIXTURE` runs a recorded kernel fixture's workload instead of the command
//! line's (fs_mark's output as usual), then prints labfs's statistics beside the kernel's per
//! file ([`crate::workload::fidelity`]).

pub mod args;

use std::io::Write as _;
use std::path::PathBuf;

use clap::Parser;
use thiserror::Error;

pub use args::FsmarkArgs;

use crate::backend::open::BackendConfig;
use crate::cli::backend_args::{BackendArgs, FsKind};
use crate::cli::observe::ObserveArgs;
use crate::cli::observe::Observer;
use crate::cli::tool::usage_error_line;
use crate::cli::tool::{Command, Outcome, RunContext};
use crate::report::fsmark::{Printer, ReportOptions};
use crate::report::output::{OutputError, OutputFile};
use crate::workload::SystemClock;
use crate::workload::fidelity::{self, Comparison, FidelityError, Fixture, FixtureError};
use crate::workload::fsmark::{
    self, Config, ConfigError, FsmarkError, LoopReport, LoopStart, Reporter, RunEnd, RunEnv,
    RunStart,
};

/// An fs_mark run, validated: the engine's configuration and how to report it.
#[derive(Debug, Clone)]
pub struct Fsmark {
    config: Config,
    report: ReportOptions,
    argv: Vec<String>,
    /// `--stats-compare`: the fixture whose workload `config` is.
    compare: Option<Fixture>,
    /// `--stats-compare` without `--device`: labfs runs on the fidelity device.
    fidelity_device: bool,
}

/// A command line fsmark refuses (exit 2).
#[derive(Debug, Error)]
pub enum FsmarkUsageError {
    /// fs_mark would refuse the options.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The `--stats-compare` fixture could not be read.
    #[error("--stats-compare: {0}")]
    Fixture(#[from] FixtureError),
    /// The fixture's recorded command does not parse as an fsmark command line.
    #[error("--stats-compare {}: the recorded command: {}", path.display(), usage_error_line::<FsmarkArgs>(source))]
    FixtureCommand {
        /// The fixture directory.
        path: PathBuf,
        /// What the parser said.
        source: clap::Error,
    },
    /// `--stats-compare` with workload options, which the fixture's command replaces.
    #[error(
        "--stats-compare runs the fixture's own fsmark command: drop -d and the workload options (-n, -s, -S, ...)"
    )]
    CompareWithWorkload,
    /// `--stats-compare` with `--fs host`.
    #[error("--stats-compare runs the fixture's workload on labfs: drop --fs host")]
    CompareOnHost,
}

/// Why an fsmark run failed.
#[derive(Debug, Error)]
pub enum FsmarkRunError {
    /// The fs_mark run (or its output) failed.
    #[error(transparent)]
    Fsmark(#[from] FsmarkError),
    /// The `--stats-compare` run failed around the fs_mark run.
    #[error(transparent)]
    Compare(FidelityError),
}

/// The engine configuration of a fixture's recorded workload, parsed with fsmark's own
/// parser (its `-d` under [`fidelity::LAB_MOUNT`]).
pub fn fixture_config(
    fixture: &Fixture,
    path: &std::path::Path,
) -> Result<(Config, ReportOptions), FsmarkUsageError> {
    let args = FsmarkArgs::try_parse_from(fixture.lab_argv()).map_err(|source| {
        FsmarkUsageError::FixtureCommand {
            path: path.to_path_buf(),
            source,
        }
    })?;
    Ok(args.to_config()?)
}

/// `args` with the flags `--stats-compare` keeps (backend, observe, `-l`) set to their
/// defaults, to see whether any workload option was given.
fn workload_options_given(args: &FsmarkArgs) -> bool {
    let mut bare = args.clone();
    bare.backend = BackendArgs::default();
    bare.observe = ObserveArgs::default();
    bare.stats_compare = None;
    let defaults = FsmarkArgs::parse_from(["fsmark"]);
    bare.log_file = defaults.log_file.clone();
    bare != defaults
}

/// fsmark's output files, created before the run.
#[derive(Debug)]
pub struct FsmarkOutputs {
    /// `-l`, appended to.
    log: OutputFile,
}

impl Command for Fsmark {
    const NAME: &'static str = "fsmark";
    type Args = FsmarkArgs;
    type UsageError = FsmarkUsageError;
    type Outputs = FsmarkOutputs;
    type Error = FsmarkRunError;

    fn new(args: FsmarkArgs, argv: Vec<String>) -> Result<Fsmark, FsmarkUsageError> {
        let Some(path) = &args.stats_compare else {
            let (config, report) = args.to_config()?;
            return Ok(Fsmark {
                config,
                report,
                argv,
                compare: None,
                fidelity_device: false,
            });
        };
        if args.backend.fs == FsKind::Host {
            return Err(FsmarkUsageError::CompareOnHost);
        }
        if workload_options_given(&args) {
            return Err(FsmarkUsageError::CompareWithWorkload);
        }
        let fixture = Fixture::load(path)?;
        let (config, mut report) = fixture_config(&fixture, path)?;
        report.log_file.clone_from(&args.log_file);
        Ok(Fsmark {
            config,
            report,
            argv,
            compare: Some(fixture),
            fidelity_device: args.backend.device.is_none(),
        })
    }

    /// `--stats-compare` runs on [`fidelity::FIDELITY_DEVICE`] unless `--device` names one.
    fn backend_config(&self, mut config: BackendConfig) -> BackendConfig {
        if let (true, BackendConfig::Lab(lab)) = (self.fidelity_device, &mut config)
            && let Ok(device) = fidelity::FIDELITY_DEVICE.parse()
        {
            lab.device = device;
        }
        config
    }

    fn work_dirs(&self) -> Vec<PathBuf> {
        self.config.dirs.clone()
    }

    /// The log, then the JSON file. The JSON file is created empty now and rewritten whole
    /// after each loop (atomically, by rename), so a bad `--json` path fails before the run.
    fn open_outputs(&self) -> Result<FsmarkOutputs, OutputError> {
        let log = OutputFile::append("log file", &self.report.log_file)?;
        if let Some(json) = &self.report.json {
            OutputFile::create("--json file", json)?;
        }
        Ok(FsmarkOutputs { log })
    }

    fn run(self, outputs: FsmarkOutputs, ctx: RunContext<'_>) -> Result<Outcome, FsmarkRunError> {
        let target = ctx.backend.target();
        let describe = ctx.backend.describe();
        let backend_line = ctx.backend.lab().map(|_| describe.clone());
        let printer = Printer::new(
            std::io::stdout().lock(),
            outputs.log.file,
            self.report,
            self.argv,
            describe,
            true,
        )
        .with_backend_line(backend_line);
        let mut reporter = WithStats {
            printer,
            observer: ctx.observer,
        };
        let env = RunEnv {
            target: target.as_ref(),
            clock: &SystemClock,
            interrupt: Some(ctx.interrupt),
        };
        let (outcome, comparison) = match (&self.compare, ctx.backend.lab()) {
            (Some(fixture), Some(lab)) => {
                let (run, outcome) = fidelity::measure(
                    lab.as_ref(),
                    &lab.fs().stats,
                    &self.config,
                    &SystemClock,
                    Some(ctx.interrupt),
                    &mut reporter,
                )
                .map_err(|e| match e {
                    FidelityError::Fsmark(e) => FsmarkRunError::Fsmark(e),
                    e => FsmarkRunError::Compare(e),
                })?;
                (outcome, Some(Comparison::new(fixture, &run)))
            }
            _ => (fsmark::run(&env, &self.config, &mut reporter)?, None),
        };
        reporter
            .printer
            .finish(&outcome)
            .map_err(FsmarkError::Output)?;
        if let Some(c) = comparison {
            let mut out = std::io::stdout().lock();
            writeln!(out)
                .and_then(|()| out.write_all(c.render().as_bytes()))
                .map_err(FsmarkError::Output)?;
        }
        Ok(match outcome.end {
            RunEnd::Interrupted => Outcome::Interrupted,
            RunEnd::Completed | RunEnd::FilesystemFull { .. } => Outcome::Completed,
        })
    }

    fn is_broken_pipe(error: &FsmarkRunError) -> bool {
        matches!(error, FsmarkRunError::Fsmark(e) if e.is_broken_pipe())
    }
}

/// fs_mark's printer, with the observer told where each loop starts and ends (for the
/// per-loop statistics blocks).
struct WithStats<'a, W: std::io::Write> {
    printer: Printer<W>,
    observer: &'a mut Observer,
}

impl<W: std::io::Write> Reporter for WithStats<'_, W> {
    fn run_started(&mut self, start: &RunStart<'_>) -> std::io::Result<()> {
        self.printer.run_started(start)
    }

    fn loop_started(&mut self, start: &LoopStart) -> std::io::Result<()> {
        self.observer
            .loop_started(u64::from(start.index))
            .map_err(std::io::Error::other)?;
        self.printer.loop_started(start)
    }

    fn loop_finished(&mut self, report: &LoopReport) -> std::io::Result<()> {
        self.printer.loop_finished(report)?;
        self.observer
            .loop_finished(u64::from(report.index))
            .map_err(std::io::Error::other)
    }
}
