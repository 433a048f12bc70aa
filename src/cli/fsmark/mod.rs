//! The fsmark command: fs_mark 3.3's command line ([`args`]) and the [`Fsmark`]
//! [`Command`] that runs the fs_mark engine ([`crate::workload::fsmark`]) with fs_mark's
//! text on stdout and in its log ([`crate::report::fsmark::Printer`]) and the XFS statistics
//! of each loop (the skeleton's [`Observer`]).

pub mod args;

use std::path::PathBuf;

pub use args::FsmarkArgs;

use crate::cli::observe::Observer;
use crate::cli::tool::{Command, Outcome, RunContext};
use crate::report::fsmark::{Printer, ReportOptions};
use crate::report::output::{OutputError, OutputFile};
use crate::workload::SystemClock;
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
    type UsageError = ConfigError;
    type Outputs = FsmarkOutputs;
    type Error = FsmarkError;

    fn new(args: FsmarkArgs, argv: Vec<String>) -> Result<Fsmark, ConfigError> {
        let (config, report) = args.to_config()?;
        Ok(Fsmark {
            config,
            report,
            argv,
        })
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

    fn run(self, outputs: FsmarkOutputs, ctx: RunContext<'_>) -> Result<Outcome, FsmarkError> {
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
        let outcome = fsmark::run(&env, &self.config, &mut reporter)?;
        reporter
            .printer
            .finish(&outcome)
            .map_err(FsmarkError::Output)?;
        Ok(match outcome.end {
            RunEnd::Interrupted => Outcome::Interrupted,
            RunEnd::Completed | RunEnd::FilesystemFull { .. } => Outcome::Completed,
        })
    }

    fn is_broken_pipe(error: &FsmarkError) -> bool {
        error.is_broken_pipe()
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
