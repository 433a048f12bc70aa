//! crashtest: the crash-consistency harness from the command line.
//!
//! Rerun one failing case (the command every failure prints):
//!
//! ```text
//! cargo run --release --example crashtest -- --case 'fsx:seed=7,ops=300,files=3,max=65536@12.3.subset-91'
//! ```
//!
//! Sweep a suite or chosen workloads:
//!
//! ```text
//! cargo run --release --example crashtest -- --suite long --coverage unflushed --random 12 --jobs 2
//! cargo run --release --example crashtest -- --workload 'fsmark:S=1,n=100' --coverage durable
//! ```
//!
//! Prints one line per workload on stderr, every failure in full and a summary on stdout.
//! Exit status: 0 when every image passed, 1 when any failed or the harness could not run,
//! 2 for a bad command line.

use std::io::Write;
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;

use fslab::fs::options::Options;
use fslab::testing::crash::oracle::Index;
use fslab::testing::crash::{Case, Coverage, Suite, SweepOptions, Workload, sweep_all};

/// Crash labfs at every flush point of a workload and check what recovers.
#[derive(Parser, Debug)]
#[command(name = "crashtest")]
struct Args {
    /// Rerun one case (WORKLOAD@POINT.COMPLETED.LANDING) and print what it finds.
    #[arg(long, conflicts_with_all = ["suite", "workload"])]
    case: Option<String>,
    /// A named suite: ci or long.
    #[arg(long)]
    suite: Option<String>,
    /// A workload spec (repeatable): fsmark:S=1,n=40,s=4096,t=1 / fsx:seed=1,ops=300 /
    /// ace:OP+OP+...
    #[arg(long)]
    workload: Vec<String>,
    /// durable (crashes right after flushes and FUA writes) or unflushed (also every way
    /// the unflushed writes can land or tear).
    #[arg(long, default_value = "unflushed")]
    coverage: String,
    /// Random crash states per flush point with --coverage unflushed.
    #[arg(long, default_value_t = 8)]
    random: u32,
    /// Seed of the random crash states.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Worker threads.
    #[arg(long, default_value_t = 1)]
    jobs: usize,
    /// Stop a workload's sweep after this many failures (0: never).
    #[arg(long, default_value_t = 3)]
    stop_after: usize,
    /// Print the workloads (one spec a line) instead of running them.
    #[arg(long)]
    list: bool,
    /// labfs options (-o style).
    #[arg(short = 'o', long, default_value = "")]
    options: String,
}

fn usage(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("crashtest: {msg}");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args = match Args::try_parse() {
        Ok(a) => a,
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(2);
        }
    };
    let options = match Options::parse(&args.options) {
        Ok(o) => o,
        Err(e) => return usage(e),
    };
    if let Some(case) = &args.case {
        let case: Case = match case.parse() {
            Ok(c) => c,
            Err(e) => return usage(e),
        };
        return rerun(&case, &options);
    }
    let coverage = match args.coverage.as_str() {
        "durable" => Coverage::Durable,
        "unflushed" => Coverage::Unflushed {
            random: args.random,
        },
        other => return usage(format!("--coverage {other:?}: durable or unflushed")),
    };
    let mut workloads: Vec<Workload> = Vec::new();
    for w in &args.workload {
        match w.parse() {
            Ok(w) => workloads.push(w),
            Err(e) => return usage(e),
        }
    }
    if let Some(s) = &args.suite {
        let suite: Suite = match s.parse() {
            Ok(s) => s,
            Err(e) => return usage(e),
        };
        match suite.workloads(&options) {
            Ok(w) => workloads.extend(w),
            Err(e) => {
                eprintln!("crashtest: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    if workloads.is_empty() {
        return usage("nothing to run: give --case, --suite or --workload");
    }
    if args.list {
        let mut out = std::io::stdout().lock();
        for w in &workloads {
            let _ = writeln!(out, "{w}");
        }
        return ExitCode::SUCCESS;
    }
    let opts = SweepOptions {
        coverage,
        seed: args.seed,
        stop_after: args.stop_after,
    };
    let started = Instant::now();
    let on_done = |w: &Workload, r: &fslab::testing::crash::SweepReport| {
        if !r.failures.is_empty() || !matches!(w, Workload::Ace(_)) {
            eprintln!("{w}: {r}");
        }
    };
    eprintln!(
        "crashtest: {} workloads, coverage {}, seed {}, {} jobs",
        workloads.len(),
        args.coverage,
        args.seed,
        args.jobs
    );
    let report = match sweep_all(&workloads, &options, &opts, args.jobs, &on_done) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("crashtest: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut out = std::io::stdout().lock();
    for f in &report.failures {
        let _ = writeln!(out, "{f}\n");
    }
    let secs = started.elapsed().as_secs_f64();
    let _ = writeln!(
        out,
        "crashtest: {} workloads: {report} in {secs:.1}s ({:.0} images/s)",
        workloads.len(),
        report.images as f64 / secs.max(1e-9)
    );
    if report.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn rerun(case: &Case, options: &Options) -> ExitCode {
    let recording = match case.workload.record(options) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("crashtest: recording {}: {e}", case.workload);
            return ExitCode::FAILURE;
        }
    };
    let index = Index::new(&recording.history);
    println!("case {case}");
    println!("operations:");
    for (i, s) in recording.history.steps.iter().enumerate() {
        println!(
            "  {i:4} {:<48} started at {}, returned at {}",
            s.call, s.started, s.acked
        );
    }
    let checked = match recording.check(&index, &case.crash) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("crashtest: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "crash at flush point {} after {} of {} pending writes ({})",
        case.crash.point,
        case.crash.completed,
        checked.pending.len(),
        checked.crash
    );
    for (p, w) in checked.pending.iter().enumerate() {
        let landed = checked.landed.iter().position(|&l| l == p);
        let torn = checked.torn.as_ref().filter(|t| t.position == p);
        println!(
            "  pending {p:3}: {}{} bytes at byte {}, issued at {}: {}",
            if w.fua { "FUA " } else { "" },
            w.len,
            w.offset,
            w.issued,
            match (landed, torn) {
                (Some(_), Some(t)) => format!("torn, sectors {:?} landed", t.landed),
                (Some(order), None) => format!("landed (#{} to land)", order + 1),
                (None, _) => "lost".to_string(),
            }
        );
    }
    if checked.findings.is_empty() {
        println!("the image passes");
        ExitCode::SUCCESS
    } else {
        for f in &checked.findings {
            println!("- {f}");
        }
        ExitCode::FAILURE
    }
}
