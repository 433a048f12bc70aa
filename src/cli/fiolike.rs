//! The fiolike command: fio 3.33's command line and job files, run by the fio engine
//! ([`crate::workload::fio`]) on labfs or host directories, with fio's reports
//! ([`crate::report::fio`]) and the skeleton's shared flags.
//!
//! fio's arguments cannot be described to clap (every job option is also a long option, job
//! files come anywhere, `-name=x` is a long option), so [`split_args`] first takes out
//! fslab's own flags, recognised from the clap definition of [`FiolikeArgs`] itself (one
//! definition per flag), and leaves the rest to fio's grammar
//! ([`crate::workload::fio::cmdline`]). `--help`, `--version` and `--parse-only` end before
//! anything is opened; everything else runs through the tool skeleton ([`tool::execute`]).
//!
//! Output: fio prints its per-job lines when jobs are defined, `fio-3.33`, the "Starting"
//! line and the layout lines before the run, then the report. On a terminal the ETA line is
//! drawn while jobs run (`--eta`); `--status-interval` prints the full report every interval
//! instead. Everything fio would print on stdout goes to stdout (or `--output`); fiolike's
//! diagnostics and the XFS statistics go to stderr, so JSON output stays parseable.

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::{ArgAction, CommandFactory, Parser};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use thiserror::Error;

use super::ExitStatus;
use super::backend_args::BackendArgs;
use super::observe::ObserveArgs;
use super::tool::{self, Command, Outcome, RunContext, SharedArgs};
use crate::report::fio::eta::{EtaInput, line as eta_line};
use crate::report::fio::json::JsonClock;
use crate::report::fio::normal::{FIO_VERSION, job_banner, layout_line, starting_line};
use crate::report::fio::{Final, logs, render};
use crate::report::output::{OutputError, OutputFile};
use crate::workload::fio::cmdline::{self, Action, CmdlineError, EtaWhen, Switches};
use crate::workload::fio::engine::{self, EngineEnv, EngineError, RunEvents, RunView};
use crate::workload::fio::jobfile::{Keywords, ProcessEnv};
use crate::workload::fio::jobset::{self, FsReader, JobSet, JobSetError};
use crate::workload::fio::stats::{CloneStats, JobLog, LogKind, build_reports};

/// fslab's flags on fiolike's command line (fio's own arguments are kept in `fio`).
#[derive(Parser, Debug, Clone)]
#[command(
    name = "fiolike",
    about = "fio 3.33 job files and command lines, on labfs or host directories",
    disable_help_flag = true,
    disable_version_flag = true
)]
pub struct FiolikeArgs {
    /// Filesystem flags.
    #[command(flatten)]
    pub backend: BackendArgs,
    /// Statistics and tracing flags.
    #[command(flatten)]
    pub observe: ObserveArgs,
    /// fio's arguments, in order (not parsed by clap).
    #[arg(skip)]
    pub fio: Vec<String>,
}

impl SharedArgs for FiolikeArgs {
    fn backend(&self) -> &BackendArgs {
        &self.backend
    }
    fn observe(&self) -> &ObserveArgs {
        &self.observe
    }
}

/// Split the arguments (without the program name) into fslab's flags and fio's arguments,
/// using [`FiolikeArgs`]'s clap definition to know which are fslab's and how many values
/// each takes. After `--` everything is fio's.
pub fn split_args(args: &[String]) -> (Vec<String>, Vec<String>) {
    let cmd = FiolikeArgs::command();
    let defs: Vec<&clap::Arg> = cmd.get_arguments().collect();
    let takes = |a: &clap::Arg| -> (usize, usize) {
        if !matches!(a.get_action(), ArgAction::Set | ArgAction::Append) {
            return (0, 0);
        }
        match a.get_num_args() {
            Some(r) => (r.min_values(), r.max_values()),
            None => (1, 1),
        }
    };
    let (mut ours, mut fio) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if arg == "--" {
            fio.extend(args[i..].iter().cloned());
            break;
        }
        let found = if let Some(body) = arg.strip_prefix("--") {
            let name = body.split('=').next().unwrap_or(body);
            defs.iter()
                .find(|d| d.get_long() == Some(name))
                .map(|d| (*d, body.contains('=')))
        } else if arg.len() == 2 && arg.starts_with('-') {
            let c = arg.chars().nth(1);
            defs.iter()
                .find(|d| d.get_short().is_some() && d.get_short() == c)
                .map(|d| (*d, false))
        } else {
            None
        };
        let Some((def, inline)) = found else {
            fio.push(arg.clone());
            continue;
        };
        ours.push(arg.clone());
        if inline {
            continue;
        }
        let (min, max) = takes(def);
        let mut n = 0;
        while n < max && i < args.len() && (n < min || !args[i].starts_with('-')) {
            ours.push(args[i].clone());
            i += 1;
            n += 1;
        }
    }
    (ours, fio)
}

/// A command line or job file fiolike refuses (exit 2).
#[derive(Debug, Error)]
pub enum FiolikeUsageError {
    /// fio's command line.
    #[error("{0}")]
    Cmdline(#[from] CmdlineError),
    /// The jobs.
    #[error("{0}")]
    Jobs(#[from] JobSetError),
}

/// A run that failed (exit 1).
#[derive(Debug, Error)]
pub enum FiolikeError {
    /// The run could not start.
    #[error("{0}")]
    Engine(#[from] EngineError),
    /// Writing the report failed.
    #[error("writing the report: {0}")]
    Output(#[from] std::io::Error),
    /// Some jobs failed (their errors are in the report).
    #[error("{failed} of {total} job clone(s) failed (err= in the report above)")]
    JobsFailed {
        /// Clones with an error.
        failed: usize,
        /// All clones.
        total: usize,
    },
}

/// A validated fiolike run.
#[derive(Debug)]
pub struct Fiolike {
    switches: Switches,
    set: JobSet,
}

/// fiolike's output files, created before the run.
#[derive(Debug)]
pub struct FiolikeOutputs {
    output: Option<OutputFile>,
    logs: Vec<PathBuf>,
}

fn read_jobs(fio: &[String]) -> Result<(cmdline::CommandLine, JobSet), FiolikeUsageError> {
    let cl = cmdline::parse(fio)?;
    let set = jobset::build(&cl, &FsReader, &ProcessEnv, Keywords::of_this_machine())?;
    Ok((cl, set))
}

/// The log files the jobs will write (fio names them by job and thread number).
fn planned_logs(set: &JobSet) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let cwd = PathBuf::from(".");
    for job in &set.jobs {
        let s = &job.spec;
        let mut kinds: Vec<(LogKind, &str)> = Vec::new();
        if let Some(l) = &s.bw_log {
            kinds.push((LogKind::Bw, &l.prefix));
        }
        if let Some(l) = &s.iops_log {
            kinds.push((LogKind::Iops, &l.prefix));
        }
        if let Some(l) = &s.lat_log {
            kinds.extend([
                (LogKind::Lat, l.prefix.as_str()),
                (LogKind::Slat, l.prefix.as_str()),
                (LogKind::Clat, l.prefix.as_str()),
            ]);
        }
        for clone in 0..s.numjobs {
            for (kind, prefix) in &kinds {
                let log = JobLog {
                    kind: *kind,
                    prefix: if prefix.is_empty() {
                        s.name.clone()
                    } else {
                        prefix.to_string()
                    },
                    thread_number: job.first_thread_number + clone,
                    per_job: s.per_job_logs,
                    samples: Vec::new(),
                };
                let path = logs::file_name(&log, &cwd);
                if !out.contains(&path) {
                    out.push(path);
                }
            }
        }
    }
    out
}

impl Command for Fiolike {
    const NAME: &'static str = "fiolike";
    type Args = FiolikeArgs;
    type UsageError = FiolikeUsageError;
    type Outputs = FiolikeOutputs;
    type Error = FiolikeError;

    fn new(args: FiolikeArgs, _argv: Vec<String>) -> Result<Fiolike, FiolikeUsageError> {
        let (cl, set) = read_jobs(&args.fio)?;
        Ok(Fiolike {
            switches: cl.switches,
            set,
        })
    }

    fn work_dirs(&self) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = Vec::new();
        for job in &self.set.jobs {
            for d in &job.spec.directories {
                let d = if d.is_absolute() {
                    d.clone()
                } else {
                    PathBuf::from("/").join(d)
                };
                if !dirs.contains(&d) {
                    dirs.push(d);
                }
            }
        }
        dirs
    }

    fn open_outputs(&self) -> Result<FiolikeOutputs, OutputError> {
        let output = match &self.switches.output {
            Some(p) => Some(OutputFile::create("--output file", p)?),
            None => None,
        };
        let logs = planned_logs(&self.set);
        for p in &logs {
            OutputFile::create("log file", p)?;
        }
        Ok(FiolikeOutputs { output, logs })
    }

    fn run(self, outputs: FiolikeOutputs, ctx: RunContext<'_>) -> Result<Outcome, FiolikeError> {
        let target = ctx.backend.target();
        let lab = ctx.backend.lab().is_some();
        let to_terminal = outputs.output.is_none() && std::io::stdout().is_terminal();
        let mut out: Box<dyn Write> = match outputs.output {
            Some(f) => Box::new(std::io::BufWriter::new(f.file)),
            None => Box::new(std::io::stdout().lock()),
        };
        let formats = self.switches.formats;
        if formats.normal {
            let mut head = String::new();
            for job in &self.set.jobs {
                head.push_str(&job_banner(&job.spec, job.groupid));
                if job.spec.numjobs > 1 {
                    head.push_str("...\n");
                }
            }
            head.push_str(FIO_VERSION);
            head.push('\n');
            let threads: u32 = self
                .set
                .jobs
                .iter()
                .filter(|j| j.spec.thread)
                .map(|j| j.spec.numjobs)
                .sum();
            head.push_str(&starting_line(threads, self.set.clones() - threads));
            out.write_all(head.as_bytes())?;
            out.flush()?;
        }
        let base_dir = if lab {
            PathBuf::from("/")
        } else {
            std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."))
        };
        let env = EngineEnv {
            target,
            base_dir,
            verify_directories: !lab,
            disk_stats: !lab,
            stop: ctx.interrupt,
        };
        let show_eta = match self.switches.eta {
            EtaWhen::Always => true,
            EtaWhen::Never => false,
            EtaWhen::Auto => to_terminal,
        } && formats.normal
            && self.switches.status_interval_ms == 0;
        let mut events = Events {
            out: &mut out,
            write_error: None,
            normal: formats.normal,
            eta: show_eta.then(|| Eta::new(&self.set)),
            status: Status {
                interval: Duration::from_millis(self.switches.status_interval_ms),
                last: Instant::now(),
                switches: &self.switches,
                set: &self.set,
            },
        };
        let outcome = engine::run(&env, &self.set, &mut events);
        if let Some(eta) = events.eta.take() {
            eta.bar.finish_and_clear();
        }
        if let Some(e) = events.write_error.take() {
            return Err(e.into());
        }
        let outcome = outcome?;
        for c in outcome.clones.iter().filter(|c| c.stats.error != 0) {
            eprintln!(
                "fio: pid={}, err={}/{}",
                c.stats.pid, c.stats.error, c.stats.verror
            );
        }
        let (reports, groups) = build_reports(&outcome.clones, outcome.groups);
        let text = render(&Final {
            reports: &reports,
            groups: &groups,
            global_options: &self.set.global_options,
            disks: &outcome.disks,
            formats,
            terse_version: self.switches.terse_version,
            clock: json_clock(outcome.elapsed),
        });
        out.write_all(text.as_bytes())?;
        out.flush()?;
        drop(out);
        let mut written = logs::write_all(&outcome.logs, &PathBuf::from("."))?;
        written.sort();
        debug_assert!(written.iter().all(|p| outputs.logs.contains(p)));
        if outcome.interrupted {
            return Ok(Outcome::Interrupted);
        }
        let failed = outcome.clones.iter().filter(|c| c.stats.error != 0).count();
        if failed > 0 {
            return Err(FiolikeError::JobsFailed {
                failed,
                total: outcome.clones.len(),
            });
        }
        Ok(Outcome::Completed)
    }

    fn is_broken_pipe(error: &FiolikeError) -> bool {
        matches!(error, FiolikeError::Output(e) if e.kind() == std::io::ErrorKind::BrokenPipe)
    }
}

fn json_clock(elapsed: Duration) -> JsonClock {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    JsonClock {
        now_secs: now.as_secs() as i64,
        now_ms: now.as_millis() as i64,
        elapsed_secs: elapsed.as_secs_f64().round() as u64,
    }
}

/// The ETA line's state: an indicatif line on stdout, rates over the last second.
struct Eta {
    bar: ProgressBar,
    state: char,
    last: Instant,
    last_bytes: [u64; 3],
    last_ios: [u64; 3],
    rate: [u64; 2],
    iops: [u64; 2],
}

impl Eta {
    fn new(set: &JobSet) -> Eta {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stdout());
        if let Ok(style) = ProgressStyle::with_template("{msg}") {
            bar.set_style(style);
        }
        // fio's letters: upper case sequential, lower case random; R read, W write, M mixed.
        let state = set.jobs.first().map_or('W', |j| {
            let rw = j.spec.rw;
            let c = match (rw.read, rw.write) {
                (true, true) => 'M',
                (true, false) => 'R',
                _ => 'W',
            };
            if rw.random { c.to_ascii_lowercase() } else { c }
        });
        Eta {
            bar,
            state,
            last: Instant::now(),
            last_bytes: [0; 3],
            last_ios: [0; 3],
            rate: [0; 2],
            iops: [0; 2],
        }
    }

    fn update(&mut self, view: &RunView<'_>) {
        let now = Instant::now();
        let bytes = view.bytes_done();
        let ios = view.ios_done();
        let dt = now.duration_since(self.last).as_secs_f64();
        if dt >= 1.0 {
            for d in 0..2 {
                self.rate[d] = ((bytes[d] - self.last_bytes[d]) as f64 / dt) as u64;
                self.iops[d] = ((ios[d] - self.last_ios[d]) as f64 / dt) as u64;
            }
            self.last = now;
            self.last_bytes = bytes;
            self.last_ios = ios;
        }
        let elapsed = view.started.elapsed();
        let total: u64 = bytes.iter().sum();
        let (done, left) = match view.runtime {
            Some(rt) if !rt.is_zero() => {
                let done = (elapsed.as_secs_f64() / rt.as_secs_f64()).min(1.0);
                (done, rt.saturating_sub(elapsed))
            }
            _ if view.planned_bytes > 0 => {
                let done = (total as f64 / view.planned_bytes as f64).min(1.0);
                let left = if done > 0.0 {
                    elapsed.mul_f64((1.0 - done) / done)
                } else {
                    Duration::ZERO
                };
                (done, left)
            }
            _ => (0.0, Duration::ZERO),
        };
        self.bar.set_message(eta_line(&EtaInput {
            running: view.running(),
            state: self.state,
            done,
            rate: self.rate,
            iops: self.iops,
            left,
        }));
    }
}

/// `--status-interval`: the whole report every interval, from snapshots of the running
/// clones.
struct Status<'a> {
    interval: Duration,
    last: Instant,
    switches: &'a Switches,
    set: &'a JobSet,
}

impl Status<'_> {
    fn due(&mut self) -> bool {
        if self.interval.is_zero() || self.last.elapsed() < self.interval {
            return false;
        }
        self.last = Instant::now();
        true
    }

    fn render(&self, view: &RunView<'_>) -> String {
        let clones: Vec<CloneStats> = view
            .snapshot(Duration::from_secs(1))
            .into_iter()
            .map(|(name, _, stats)| {
                let gr = self
                    .set
                    .jobs
                    .iter()
                    .find(|j| j.spec.name == name)
                    .is_some_and(|j| j.spec.group_reporting);
                CloneStats {
                    stats,
                    group_reporting: gr,
                }
            })
            .collect();
        let (reports, groups) = build_reports(&clones, self.set.groups());
        render(&Final {
            reports: &reports,
            groups: &groups,
            global_options: &self.set.global_options,
            disks: &[],
            formats: self.switches.formats,
            terse_version: self.switches.terse_version,
            clock: json_clock(view.started.elapsed()),
        })
    }
}

struct Events<'a, 'w> {
    out: &'w mut Box<dyn Write>,
    write_error: Option<std::io::Error>,
    normal: bool,
    eta: Option<Eta>,
    status: Status<'a>,
}

impl Events<'_, '_> {
    fn write(&mut self, text: &str) {
        if self.write_error.is_some() {
            return;
        }
        let r = self
            .out
            .write_all(text.as_bytes())
            .and_then(|()| self.out.flush());
        if let Err(e) = r {
            self.write_error = Some(e);
        }
    }
}

impl RunEvents for Events<'_, '_> {
    fn layout(&mut self, job: &str, files: u32, bytes: u64) {
        if self.normal {
            self.write(&layout_line(job, files, bytes));
        }
    }

    fn setup_failed(&mut self, job: &str, error: &str) {
        eprintln!("fiolike: {job}: {error}");
    }

    fn tick(&mut self, view: &RunView<'_>) {
        if let Some(eta) = &mut self.eta {
            eta.update(view);
        }
        if self.status.due() {
            let text = self.status.render(view);
            self.write(&text);
        }
    }
}

const HELP: &str = "\
fiolike: fio 3.33 job files and command lines, on labfs (default) or host directories

Usage: fiolike [fslab flags] [fio options] [job files]

fio's command line:
  --name=JOB [--OPTION=VALUE ...]    define a job (options before the first --name are
                                     defaults for every job, job files included)
  JOBFILE ... | -                    job files (INI), - for stdin
  --output=FILE                      write the report to FILE
  --output-format=normal|terse|json|json+   (comma list)
  --minimal                          terse output
  --terse-version=2..5               terse version (3)
  --section=NAME                     run only this section (repeatable)
  --parse-only                       check the jobs and exit
  --status-interval=TIME             print the report every TIME while running
  --eta=auto|always|never            the ETA line (on a terminal by default)
  --version, --help

fslab flags:
  --fs lab|host                      labfs (default) or the host's directories
  --device SPEC                      labfs device: mem:1g (default), file:PATH,size=4g,
                                     stripe:6,su=64k,mem:1g
  -o OPTIONS, --mount-options OPTIONS   labfs mount/mkfs options
  --mkfs                             make a new labfs on a file device
  --stats, --stats-out FILE, --stats-decode FILE [FILE], --stats-clear
                                     XFS statistics for the run (on stderr)
  --trace EVENTS, --trace-out FILE, --trace-format ftrace|json, --trace-hist E.F[/G]
                                     tracepoints

Job options implemented: name description rw/readwrite rwmixread rwmixwrite bs size filesize
nrfiles io_size offset fsync fdatasync end_fsync fsync_on_close fallocate direct buffered
ioengine (sync psync pvsync libaio io_uring fslab) iodepth time_based runtime ramp_time
directory filename numjobs group_reporting new_group stonewall thread create_on_open
create_fsync unlink unlink_each_loop randrepeat randseed norandommap overwrite kb_base
unit_base loops write_bw_log write_lat_log write_iops_log log_avg_msec per_job_logs.
Other fio options are refused by name.
";

/// fiolike's `main`: split the arguments, answer `--help`/`--version`/`--parse-only`, and run
/// everything else through the tool skeleton.
pub fn main() -> std::process::ExitCode {
    let argv: Vec<String> = std::env::args_os()
        .map(|a: OsString| a.to_string_lossy().into_owned())
        .collect();
    let (ours, fio) = split_args(argv.get(1..).unwrap_or(&[]));
    let mut clap_argv: Vec<String> = vec![Fiolike::NAME.to_string()];
    clap_argv.extend(ours);
    let mut args = match tool::parse::<FiolikeArgs>(
        Fiolike::NAME,
        clap_argv.into_iter().map(OsString::from).collect(),
    ) {
        Ok(a) => a,
        Err(status) => return status.into(),
    };
    match cmdline::parse(&fio) {
        Ok(cl) if cl.action == Action::Help => {
            print!("{HELP}");
            return ExitStatus::Ok.into();
        }
        Ok(cl) if cl.action == Action::Version => {
            println!(
                "{FIO_VERSION} (fiolike, fslab {})",
                env!("CARGO_PKG_VERSION")
            );
            return ExitStatus::Ok.into();
        }
        Ok(cl) if cl.switches.parse_only => {
            return match read_jobs(&fio) {
                Ok(_) => ExitStatus::Ok.into(),
                Err(e) => {
                    eprintln!("{}: {e}", Fiolike::NAME);
                    ExitStatus::Usage.into()
                }
            };
        }
        Ok(_) => {}
        Err(e) => {
            eprintln!("{}: {e}", Fiolike::NAME);
            return ExitStatus::Usage.into();
        }
    }
    args.fio = fio;
    if args.observe.wants_event_list() || args.observe.files_to_decode().is_some() {
        // The early exits need no jobs.
        args.fio = vec!["--name=none".into(), "--size=4k".into()];
    }
    tool::execute::<Fiolike>(args, argv)
        .report(Fiolike::NAME)
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn fslab_flags_are_taken_out_and_the_rest_is_fios() {
        let (ours, fio) = split_args(&s(&[
            "--fs",
            "host",
            "--name=x",
            "-o",
            "cksum=split",
            "--rw=write",
            "--stats",
            "job.fio",
            "--trace=xfs_log_force",
            "--device=mem:2g",
            "--size",
            "1m",
        ]));
        assert_eq!(
            ours,
            s(&[
                "--fs",
                "host",
                "-o",
                "cksum=split",
                "--stats",
                "--trace=xfs_log_force",
                "--device=mem:2g"
            ])
        );
        assert_eq!(
            fio,
            s(&["--name=x", "--rw=write", "job.fio", "--size", "1m"])
        );
        let (ours, fio) = split_args(&s(&["--stats-decode", "a", "b", "--", "--stats"]));
        assert_eq!(ours, s(&["--stats-decode", "a", "b"]));
        assert_eq!(fio, s(&["--stats"]));
    }

    #[test]
    fn planned_log_names_follow_thread_numbers() {
        let (_, set) = read_jobs(&s(&[
            "--name=a",
            "--size=4k",
            "--numjobs=2",
            "--write_bw_log=bw",
            "--name=b",
            "--size=4k",
            "--write_lat_log",
        ]))
        .unwrap();
        let names: Vec<String> = planned_logs(&set)
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            vec![
                "bw_bw.1.log",
                "bw_bw.2.log",
                "b_lat.3.log",
                "b_slat.3.log",
                "b_clat.3.log"
            ]
        );
    }
}
