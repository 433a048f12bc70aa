//! fsmark: fs_mark 3.3 compatible metadata benchmark.
//!
//! Thin shell: parse fs_mark's options, validate, run the engine on the host's filesystems,
//! print fs_mark's output. Usage errors exit 2, run failures 1, each as one line on stderr; a
//! closed stdout ends the run quietly. Ctrl-C ends the run after the current iteration with the
//! summary, as in fs_mark.

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::Parser;
use clap::error::ErrorKind;

use fslab::cli::{EXIT_FAILURE, EXIT_OK, EXIT_USAGE};
use fslab::report::fsmark::Printer;
use fslab::target::Target;
use fslab::target::host::HostTarget;
use fslab::workload::SystemClock;
use fslab::workload::fsmark::{self, FsmarkArgs, RunEnv};

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
    let (config, report_opts) = match args.to_config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("fsmark: {e}");
            return exit(EXIT_USAGE);
        }
    };

    let target = HostTarget::new();
    let stdout = std::io::stdout().lock();
    let mut printer = match Printer::new(stdout, report_opts, argv, target.describe(), true) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("fsmark: {e}");
            return exit(EXIT_FAILURE);
        }
    };
    install_sigint_handler();
    let env = RunEnv {
        target: &target,
        clock: &SystemClock,
        interrupt: Some(&INTERRUPTED),
    };
    let result = fsmark::run(&env, &config, &mut printer).and_then(|outcome| {
        printer
            .finish(&outcome)
            .map_err(fsmark::FsmarkError::Output)
    });
    match result {
        Ok(()) => exit(EXIT_OK),
        Err(e) if e.is_broken_pipe() => exit(EXIT_OK),
        Err(e) => {
            let _ = std::io::stdout().flush();
            eprintln!("fsmark: {e}");
            exit(EXIT_FAILURE)
        }
    }
}
