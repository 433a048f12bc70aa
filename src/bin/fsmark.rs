//! fsmark: fs_mark 3.3 compatible metadata benchmark, on labfs or the host.
//!
//! Thin shell: parse fs_mark's options (plus fslab's target and observability flags), open
//! the target, run the engine, print fs_mark's output. Usage errors exit 2, run failures 1,
//! each as one line on stderr; a closed stdout ends the run quietly. Ctrl-C ends the run after
//! the current iteration with the summary, as in fs_mark.

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::Parser;
use clap::error::ErrorKind;

use fslab::backend::mkdir_parents;
use fslab::cli::observe::{Observer as StatsObserver, decode_files, event_list};
use fslab::cli::target_args::TargetSetupError;
use fslab::cli::{EXIT_FAILURE, EXIT_OK, EXIT_USAGE};
use fslab::report::fsmark::Printer;
use fslab::workload::SystemClock;
use fslab::workload::fsmark::{self, FsmarkArgs, LoopReport, RunEnv, RunStart};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// Let SIGINT only raise [`INTERRUPTED`]; the run stops after the current iteration.
fn install_sigint_handler() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe; the sigaction
    // struct is fully initialised before use.
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = on_sigint as *const () as libc::sighandler_t;
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaction(libc::SIGINT, &act, std::ptr::null_mut());
    }
}

fn exit(code: i32) -> ExitCode {
    ExitCode::from(code as u8)
}

/// The fs_mark printer, plus the per-loop statistics dump.
struct Reporter<W: Write> {
    printer: Printer<W>,
    stats: StatsObserver,
    loops: u64,
}

impl<W: Write> fsmark::Observer for Reporter<W> {
    fn run_started(&mut self, start: &RunStart<'_>) -> std::io::Result<()> {
        self.printer.run_started(start)
    }
    fn loop_started(&mut self, start: &fsmark::LoopStart) -> std::io::Result<()> {
        self.printer.loop_started(start)
    }
    fn loop_finished(&mut self, report: &LoopReport) -> std::io::Result<()> {
        self.printer.loop_finished(report)?;
        self.loops += 1;
        self.stats
            .loop_done(self.loops)
            .map_err(std::io::Error::other)
    }
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let args = match FsmarkArgs::try_parse_from(std::env::args_os()) {
        Ok(a) => a,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            let _ = e.print();
            return exit(EXIT_OK);
        }
        Err(e) => {
            eprintln!(
                "fsmark: {} (try --help)",
                fsmark::args::usage_error_line(&e)
            );
            return exit(EXIT_USAGE);
        }
    };
    if args.observe.wants_event_list() {
        print!("{}", event_list());
        return exit(EXIT_OK);
    }
    if let Some(files) = args.observe.files_to_decode() {
        return match decode_files(files) {
            Ok(text) => {
                print!("{text}");
                exit(EXIT_OK)
            }
            Err(e) => {
                eprintln!("fsmark: {e}");
                exit(EXIT_FAILURE)
            }
        };
    }
    let (config, report_opts) = match args.to_config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("fsmark: {e}");
            return exit(EXIT_USAGE);
        }
    };
    let opened = match args.target.open() {
        Ok(t) => t,
        Err(
            e @ (TargetSetupError::Options(_)
            | TargetSetupError::Spec(_)
            | TargetSetupError::LabOnly(_)),
        ) => {
            eprintln!("fsmark: {e}");
            return exit(EXIT_USAGE);
        }
        Err(e) => {
            eprintln!("fsmark: {e}");
            return exit(EXIT_FAILURE);
        }
    };
    let target = std::sync::Arc::clone(&opened.target);
    let backend_line = opened.lab.as_ref().map(|_| target.describe());
    if opened.lab.is_some() {
        for dir in &config.dirs {
            if let Err(e) = mkdir_parents(target.as_ref(), dir) {
                eprintln!(
                    "fsmark: cannot create the parents of {} on labfs: {e}",
                    dir.display()
                );
                return exit(EXIT_FAILURE);
            }
        }
    }
    let stats = match StatsObserver::start(&args.observe, opened.stats.clone()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("fsmark: {e}");
            return exit(EXIT_FAILURE);
        }
    };
    let stdout = std::io::stdout().lock();
    let printer = match Printer::new(stdout, report_opts, argv, target.describe(), true) {
        Ok(p) => p.with_backend_line(backend_line),
        Err(e) => {
            eprintln!("fsmark: {e}");
            return exit(EXIT_FAILURE);
        }
    };
    let mut reporter = Reporter {
        printer,
        stats,
        loops: 0,
    };
    install_sigint_handler();
    let env = RunEnv {
        target: target.as_ref(),
        clock: &SystemClock,
        interrupt: Some(&INTERRUPTED),
    };
    let result = fsmark::run(&env, &config, &mut reporter).and_then(|outcome| {
        reporter
            .printer
            .finish(&outcome)
            .map_err(fsmark::FsmarkError::Output)
    });
    let code = match result {
        Ok(()) => EXIT_OK,
        Err(e) if e.is_broken_pipe() => EXIT_OK,
        Err(e) => {
            let _ = std::io::stdout().flush();
            eprintln!("fsmark: {e}");
            EXIT_FAILURE
        }
    };
    // Statistics and traces cover the run (dumped before unmount, as a user reads
    // /proc/fs/xfs/stat right after the benchmark); then labfs writes everything back.
    let mut code = code;
    if let Err(e) = reporter.stats.finish() {
        eprintln!("fsmark: {e}");
        code = EXIT_FAILURE;
    }
    drop(target);
    if let Err(e) = opened.finish() {
        eprintln!("fsmark: unmounting labfs: {e}");
        code = EXIT_FAILURE;
    }
    exit(code)
}
