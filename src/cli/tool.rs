//! The tool skeleton: the one `main` every binary runs through.
//!
//! Every fslab binary does the same things around its workload, in the same order, and each
//! of them is easy to get subtly wrong (an output path checked after an hour of work, a
//! Ctrl-C that cannot stop a run, a usage error that exits 1). So they are written once,
//! here, as a pipeline in the style of hyperfine's `main`:
//!
//! 1. **Parse** the command line ([`parse`]): `-h`/`--help` print to stdout and exit 0; a
//!    refused command line is one line `NAME: ...` on stderr and exit 2.
//! 2. **Early exits** of the shared flags: `--trace list` prints the event catalogue,
//!    `--stats-decode FILE [FILE]` decodes snapshots (warning on stderr when counters went
//!    backwards between them); neither touches a filesystem.
//! 3. **Validate**: the shared flags ([`ObserveArgs::validate`], [`BackendArgs::to_config`])
//!    and the command's own ([`Command::new`]), each refusal one line and exit 2; the
//!    command may then size the backend for its work ([`Command::backend_config`]).
//! 4. **Create the output files** (`--stats-out`, `--trace-out`, then the command's own,
//!    [`Command::open_outputs`]) before any work: a bad path is one line and exit 1.
//! 5. **Open the backend** (`--fs`, `--device`, `-o`, `--mkfs`; labfs is made and mounted)
//!    and, on labfs, create the parents of the command's directories
//!    ([`Command::work_dirs`]), since labfs starts empty.
//! 6. **Observe**: clear the statistics and start the trace session ([`Observer::start`]).
//! 7. **Run** the engine ([`Command::run`]) with the target, the observer and the Ctrl-C flag
//!    ([`interrupt`]: the first Ctrl-C raises the flag, the second exits 130 at once).
//! 8. **Tear down**, whatever happened: finish the observer (final statistics block, trace
//!    output), then unmount labfs, which writes everything back; each failure is reported.
//! 9. **Exit** with the first failure's [`ExitStatus`]: 0 done (or stopped by one Ctrl-C), 1
//!    run failure, 2 usage; a closed stdout ends the run quietly with 0, as ripgrep does.
//!
//! A binary is then a few lines: a [`Command`] implementation (in `crate::cli`, next to the
//! binary's clap arguments) turns the arguments into the engine's plain configuration and
//! runs the engine; the binary calls [`main`]:
//!
//! ```no_run
//! use std::path::PathBuf;
//!
//! use clap::Parser;
//! use fslab::backend::Target;
//! use fslab::cli::backend_args::BackendArgs;
//! use fslab::cli::observe::ObserveArgs;
//! use fslab::cli::tool::{self, Command, Outcome, RunContext, SharedArgs};
//! use fslab::report::output::OutputError;
//!
//! /// `touchall -d DIR -n N`: create N empty files in DIR.
//! #[derive(Parser)]
//! struct TouchArgs {
//!     #[arg(short = 'd')]
//!     dir: PathBuf,
//!     #[arg(short = 'n', default_value_t = 10)]
//!     files: u32,
//!     #[command(flatten)]
//!     backend: BackendArgs,
//!     #[command(flatten)]
//!     observe: ObserveArgs,
//! }
//!
//! impl SharedArgs for TouchArgs {
//!     fn backend(&self) -> &BackendArgs {
//!         &self.backend
//!     }
//!     fn observe(&self) -> &ObserveArgs {
//!         &self.observe
//!     }
//! }
//!
//! /// A refused command line.
//! #[derive(Debug, thiserror::Error)]
//! #[error("-n 0: nothing to create")]
//! struct NoFiles;
//!
//! struct Touch {
//!     dir: PathBuf,
//!     files: u32,
//! }
//!
//! impl Command for Touch {
//!     const NAME: &'static str = "touchall";
//!     type Args = TouchArgs;
//!     type UsageError = NoFiles;
//!     type Outputs = ();
//!     type Error = fslab::backend::TargetError;
//!
//!     fn new(args: TouchArgs, _argv: Vec<String>) -> Result<Touch, NoFiles> {
//!         if args.files == 0 {
//!             return Err(NoFiles);
//!         }
//!         Ok(Touch { dir: args.dir, files: args.files })
//!     }
//!     fn work_dirs(&self) -> Vec<PathBuf> {
//!         vec![self.dir.clone()]
//!     }
//!     fn open_outputs(&self) -> Result<(), OutputError> {
//!         Ok(())
//!     }
//!     fn run(self, (): (), mut ctx: RunContext<'_>) -> Result<Outcome, Self::Error> {
//!         let target = ctx.backend.target();
//!         target.mkdir(&self.dir, 0o755)?;
//!         for i in 0..self.files {
//!             if ctx.stop_requested() {
//!                 return Ok(Outcome::Interrupted);
//!             }
//!             let fd = target.open(
//!                 &self.dir.join(i.to_string()),
//!                 fslab::backend::OpenFlags::create_truncate(),
//!                 0o644,
//!             )?;
//!             target.close(fd)?;
//!         }
//!         ctx.observer.loop_finished(1).ok();
//!         Ok(Outcome::Completed)
//!     }
//! }
//!
//! fn main() -> std::process::ExitCode {
//!     tool::main::<Touch>()
//! }
//! ```
//!
//! Binaries that do not run a workload on a backend (the `labfs` admin tool) use the pieces
//! directly: [`parse`] for the command line and [`ExitStatus`] for the exit.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::error::ErrorKind;
use clap::{CommandFactory, Parser};
use thiserror::Error;

use super::ExitStatus;
use super::backend_args::{BackendArgs, BackendArgsError};
use super::interrupt;
use super::observe::{
    ObserveArgs, ObserveArgsError, ObserveError, Observer, backwards_warning, decode_files,
    event_list,
};
use crate::backend::TargetError;
use crate::backend::open::{
    BackendConfig, OpenError, OpenedBackend, ParentsError, StatsSource, open,
};
use crate::report::output::OutputError;

/// A binary's arguments carry the shared flag groups (flattened [`BackendArgs`] and
/// [`ObserveArgs`]); the skeleton reads them through this.
pub trait SharedArgs {
    /// `--fs`, `--device`, `-o`, `--mkfs`.
    fn backend(&self) -> &BackendArgs;
    /// `--trace*`, `--stats*`.
    fn observe(&self) -> &ObserveArgs;
}

/// One binary's command: its arguments, validated into its engine's configuration, and how
/// it runs (see the module docs for the pipeline around it).
pub trait Command: Sized {
    /// The binary's name, the prefix of every line it prints on stderr.
    const NAME: &'static str;
    /// Its clap arguments.
    type Args: Parser + SharedArgs;
    /// A command line the command refuses beyond what clap checks (exit 2).
    type UsageError: std::error::Error;
    /// The command's own output files, created before the run by [`Command::open_outputs`].
    type Outputs;
    /// Why a run failed (exit 1).
    type Error: std::error::Error;

    /// Validate the arguments (`argv` is the command line as typed, for tools that echo it).
    fn new(args: Self::Args, argv: Vec<String>) -> Result<Self, Self::UsageError>;
    /// The directories the run works in; on labfs, their parents are created first.
    fn work_dirs(&self) -> Vec<PathBuf>;
    /// The backend to open, given the one the shared flags describe: a command whose work
    /// needs more than the defaults provide (syncbench's sweep needs an inode cache and a
    /// device as large as the inodes it is asked to cache) raises what the user left at its
    /// default here. Called after [`Command::new`]; the default keeps `config`.
    fn backend_config(&self, config: BackendConfig) -> BackendConfig {
        config
    }
    /// Create every file the command writes (logs, JSON, ...), before any work.
    fn open_outputs(&self) -> Result<Self::Outputs, OutputError>;
    /// Run the engine on the opened backend.
    fn run(self, outputs: Self::Outputs, ctx: RunContext<'_>) -> Result<Outcome, Self::Error>;
    /// Whether `error` only says that the reader of stdout went away (`tool | head`): the
    /// run then ends quietly with status 0.
    fn is_broken_pipe(error: &Self::Error) -> bool {
        let _ = error;
        false
    }
}

/// What an engine runs with.
pub struct RunContext<'a> {
    /// The filesystem of the run ([`OpenedBackend::target`] for the calls).
    pub backend: &'a OpenedBackend,
    /// The run's statistics and trace; tell it where loops start and end.
    pub observer: &'a mut Observer,
    /// Raised by the first Ctrl-C: stop at the next point that leaves things consistent.
    pub interrupt: &'a AtomicBool,
}

impl RunContext<'_> {
    /// Whether Ctrl-C asked the run to stop.
    pub fn stop_requested(&self) -> bool {
        self.interrupt.load(Ordering::Relaxed)
    }
}

/// How a run that did not fail ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It did everything it was asked to.
    Completed,
    /// Ctrl-C stopped it early, cleanly, with what was done reported (exit status 0, as
    /// fs_mark exits after an interrupted run).
    Interrupted,
}

/// Something that ended or spoiled a run, at any stage of the pipeline.
#[derive(Debug, Error)]
pub enum ToolError<U: std::error::Error, R: std::error::Error> {
    /// The observability flags do not combine (usage).
    #[error(transparent)]
    ObserveArgs(ObserveArgsError),
    /// The backend flags do not combine (usage).
    #[error(transparent)]
    BackendArgs(BackendArgsError),
    /// The command refused its arguments (usage).
    #[error(transparent)]
    Usage(U),
    /// An output file could not be created.
    #[error(transparent)]
    Output(OutputError),
    /// The device could not be opened or labfs not mounted.
    #[error(transparent)]
    Open(OpenError),
    /// The parents of a work directory could not be created on labfs.
    #[error(transparent)]
    Parents(ParentsError),
    /// Statistics or tracing failed (including `--stats-decode`).
    #[error(transparent)]
    Observe(ObserveError),
    /// The run failed.
    #[error(transparent)]
    Run(R),
    /// labfs could not write everything back at the end.
    #[error("unmounting labfs: {0}")]
    Unmount(TargetError),
}

impl<U: std::error::Error, R: std::error::Error> ToolError<U, R> {
    /// The exit status this failure calls for.
    pub fn exit_status(&self) -> ExitStatus {
        match self {
            ToolError::ObserveArgs(_) | ToolError::BackendArgs(_) | ToolError::Usage(_) => {
                ExitStatus::Usage
            }
            ToolError::Output(_)
            | ToolError::Open(_)
            | ToolError::Parents(_)
            | ToolError::Observe(_)
            | ToolError::Run(_)
            | ToolError::Unmount(_) => ExitStatus::Failure,
        }
    }
}

/// The failures of command `C`.
pub type CommandError<C> = ToolError<<C as Command>::UsageError, <C as Command>::Error>;

/// How a pipeline ended: the outcome if the run got that far, and every failure on the way
/// (a run failure can be followed by an unmount failure; each is reported).
#[derive(Debug)]
pub struct Ended<U: std::error::Error, R: std::error::Error> {
    /// The engine's outcome, if it ran and did not fail.
    pub outcome: Option<Outcome>,
    /// Failures, in the order they happened.
    pub errors: Vec<ToolError<U, R>>,
}

impl<U: std::error::Error, R: std::error::Error> Ended<U, R> {
    fn with(outcome: Outcome) -> Self {
        Ended {
            outcome: Some(outcome),
            errors: Vec::new(),
        }
    }

    fn failed(error: ToolError<U, R>) -> Self {
        Ended {
            outcome: None,
            errors: vec![error],
        }
    }

    /// The exit status: the first failure's, or 0.
    pub fn status(&self) -> ExitStatus {
        self.errors
            .first()
            .map_or(ExitStatus::Ok, ToolError::exit_status)
    }

    /// Print each failure as one line `NAME: ...` on stderr (after whatever the run wrote to
    /// stdout) and return the exit status.
    pub fn report(&self, name: &str) -> ExitStatus {
        if !self.errors.is_empty() {
            let _ = std::io::stdout().flush();
        }
        for e in &self.errors {
            eprintln!("{name}: {e}");
        }
        self.status()
    }
}

/// Parse `argv` (program name first) into `A`. `Err(status)` means the process should exit
/// with `status` now: help was printed to stdout (0), or one line `NAME: ...` saying what is
/// wrong was printed to stderr (2).
pub fn parse<A: Parser>(name: &str, argv: Vec<OsString>) -> Result<A, ExitStatus> {
    match A::try_parse_from(argv) {
        Ok(a) => Ok(a),
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            let _ = e.print();
            Err(ExitStatus::Ok)
        }
        Err(e) => {
            eprintln!("{name}: {} (try --help)", usage_error_line::<A>(&e));
            Err(ExitStatus::Usage)
        }
    }
}

/// One line for a command-line error: clap's first line, without its `error: ` prefix, with
/// options that have a short form named by it (`-n`, not `--num-files <NUM>`), the way users
/// of the tools fslab imitates type them.
pub fn usage_error_line<A: CommandFactory>(err: &clap::Error) -> String {
    let text = err.to_string();
    let first = text.lines().next().unwrap_or("bad command line");
    let mut line = first.strip_prefix("error: ").unwrap_or(first).to_string();
    for arg in A::command().get_arguments() {
        if let (Some(short), Some(long)) = (arg.get_short(), arg.get_long())
            && let Some(names) = arg.get_value_names()
        {
            let shown: Vec<String> = names.iter().map(|n| format!("<{n}>")).collect();
            let clap_form = format!("--{long} {}", shown.join(" "));
            line = line.replace(&clap_form, &format!("-{short}"));
        }
    }
    line
}

/// The whole pipeline for the current process: parse `std::env::args_os()`, run, report,
/// and return the exit code. A binary's `main` is `tool::main::<ItsCommand>()`.
pub fn main<C: Command>() -> std::process::ExitCode {
    let argv: Vec<OsString> = std::env::args_os().collect();
    let text: Vec<String> = argv
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let args = match parse::<C::Args>(C::NAME, argv) {
        Ok(a) => a,
        Err(status) => return status.into(),
    };
    execute::<C>(args, text).report(C::NAME).into()
}

/// Run the pipeline from parsed arguments (steps 2 to 8 of the module docs) and say how it
/// ended; nothing is printed on stderr here except what the observer and engine print.
pub fn execute<C: Command>(args: C::Args, argv: Vec<String>) -> Ended<C::UsageError, C::Error> {
    let observe = args.observe().clone();
    if observe.wants_event_list() {
        print!("{}", event_list());
        return Ended::with(Outcome::Completed);
    }
    if let Some(files) = observe.files_to_decode() {
        return match decode_files(files) {
            Ok(decoded) => {
                print!("{}", decoded.text);
                if let Some(warning) = backwards_warning(&decoded.regressions) {
                    let _ = std::io::stdout().flush();
                    eprintln!("{}: {warning}", C::NAME);
                }
                Ended::with(Outcome::Completed)
            }
            Err(e) => Ended::failed(ToolError::Observe(e)),
        };
    }
    if let Err(e) = observe.validate() {
        return Ended::failed(ToolError::ObserveArgs(e));
    }
    let backend_config = match args.backend().to_config() {
        Ok(c) => c,
        Err(e) => return Ended::failed(ToolError::BackendArgs(e)),
    };
    let command = match C::new(args, argv) {
        Ok(c) => c,
        Err(e) => return Ended::failed(ToolError::Usage(e)),
    };
    let backend_config = command.backend_config(backend_config);
    let observe_outputs = match observe.open_outputs() {
        Ok(o) => o,
        Err(e) => return Ended::failed(ToolError::Output(e)),
    };
    let outputs = match command.open_outputs() {
        Ok(o) => o,
        Err(e) => return Ended::failed(ToolError::Output(e)),
    };
    let backend = match open(&backend_config) {
        Ok(b) => b,
        Err(e) => return Ended::failed(ToolError::Open(e)),
    };

    // The backend is open: from here every path ends with the teardown below.
    let mut ended = Ended {
        outcome: None,
        errors: Vec::new(),
    };
    let started = backend
        .create_parents(&command.work_dirs())
        .map_err(ToolError::Parents)
        .and_then(|()| {
            // A host run inside a labfs FUSE mount reads that mount's statistics files.
            let dirs = command.work_dirs();
            let mut source = backend.stats_source(&dirs);
            if matches!(source, StatsSource::Host { .. })
                && let Some(stats) = dirs.first().and_then(|d| crate::fuse::stats_dir_of(d))
            {
                source = StatsSource::Files(stats);
            }
            Observer::start(&observe, source, observe_outputs).map_err(ToolError::Observe)
        });
    match started {
        Err(e) => ended.errors.push(e),
        Ok(mut observer) => {
            let ctx = RunContext {
                backend: &backend,
                observer: &mut observer,
                interrupt: interrupt::install(C::NAME),
            };
            match command.run(outputs, ctx) {
                Ok(outcome) => ended.outcome = Some(outcome),
                Err(e) if C::is_broken_pipe(&e) => ended.outcome = Some(Outcome::Completed),
                Err(e) => ended.errors.push(ToolError::Run(e)),
            }
            // Statistics and traces cover the run, dumped before the unmount, as a user
            // reads /proc/fs/xfs/stat right after the benchmark. The unlinks' inactivations
            // finish first: on the host fslab syncs and waits for the kernel's inodegc to
            // settle before its reading, and labfs's queue is flushed to the same point.
            if let OpenedBackend::Lab(lab) = &backend
                && let Err(e) = lab.fs().inodegc_flush()
            {
                ended.errors.push(ToolError::Unmount(e.into()));
            }
            if let Err(e) = observer.finish() {
                ended.errors.push(ToolError::Observe(e));
            }
        }
    }
    if let Err(e) = backend.finish() {
        ended.errors.push(ToolError::Unmount(e));
    }
    ended
}
