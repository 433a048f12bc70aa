//! `--trace*` and `--stats*`: the observability flags every binary shares, and the run-time
//! glue that turns them into a trace session and XFS stat dumps.
//!
//! Stat blocks go to stderr (or `--stats-out FILE` for the final one) so that a tool's own
//! stdout stays byte-compatible with the tool it imitates: a user's fs_mark parser keeps
//! working with `--stats` on. Blocks are the `/proc/fs/xfs/stat` layout, decodable again with
//! `--stats-decode` or any tool that reads that file.
//!
//! Stats are cleared at the start, as a user writes `stats_clear` before a run:
//! - on labfs, the mount's own counters are cleared (kernel semantics: all but vnodes\[0\]);
//! - on the host, clearing the kernel's counters needs root, so it happens only with
//!   `--stats-clear`; otherwise fslab reads them before and after and prints the difference,
//!   which is the same figure without the privilege;
//! - on the host inside a labfs FUSE mount (`labfs mount`), that mount's own counters, read
//!   from `MOUNTPOINT/.labfs/stats/stats` and cleared by writing 1 to `stats_clear` (the
//!   mount's counters, so no privilege is needed).

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use thiserror::Error;

use crate::backend::Target as _;
use crate::backend::TargetError;
use crate::backend::host::HostTarget;
use crate::backend::open::StatsSource;
use crate::fs::stats::decode::{Regression, StatDiff, StatFile};
use crate::fs::stats::host::{
    HostStatsError, SETTLE_TIMEOUT, clear_stats_at, read_stats_from, settle,
};
use crate::report::output::{OutputError, OutputFile};
use crate::trace::TraceError;
use crate::trace::registry::{self, EventSet};
use crate::trace::session::{
    DEFAULT_RING_ENTRIES, HistSpec, Session, TraceConfig, TraceFormat, TraceSummary,
};

/// Observability flags, flattened into each binary's arguments.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct ObserveArgs {
    /// Record tracepoints: comma list of event names or globs (`xfs_ail_*`, `xfs:*`,
    /// `all`, `!name` to exclude); `--trace list` prints the catalogue and exits.
    #[arg(long, value_name = "EVENTS")]
    pub trace: Option<String>,
    /// Write the trace here instead of stderr.
    #[arg(long, value_name = "FILE")]
    pub trace_out: Option<PathBuf>,
    /// Trace format: `ftrace` (the /sys/kernel/tracing/trace text) or `json` (one object per line).
    #[arg(long, value_name = "FORMAT", default_value = "ftrace", value_parser = parse_format)]
    pub trace_format: TraceFormat,
    /// Keep an ilog2 histogram of an event field, e.g. `crc32c.len`, `crc32c.len/site`
    /// (grouped) or `crc32c.len/site,mode` (one per combination); printed to stderr at the
    /// end. Repeatable.
    #[arg(long, value_name = "EVENT.FIELD[/GROUP[,GROUP]]", value_parser = parse_hist)]
    pub trace_hist: Vec<HistSpec>,
    /// Trace records kept per thread (oldest overwritten, as ftrace's ring buffer).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_RING_ENTRIES)]
    pub trace_buffer: usize,
    /// Print the XFS statistics (/proc/fs/xfs/stat layout) for the run at the end, and after
    /// each loop where the tool has loops (to stderr).
    #[arg(long)]
    pub stats: bool,
    /// Also write the final statistics block to FILE.
    #[arg(long, value_name = "FILE")]
    pub stats_out: Option<PathBuf>,
    /// Print statistics decoded, field by field with their meaning (implies --stats). With
    /// one FILE (a /proc/fs/xfs/stat snapshot from any kernel, `-` for stdin): decode it and
    /// exit; with two: decode their difference (the second minus the first) and exit.
    #[arg(long, value_name = "FILE", num_args = 0..=2)]
    pub stats_decode: Option<Vec<PathBuf>>,
    /// On the host, clear the kernel's XFS statistics first (needs root); without it fslab
    /// prints the difference between before and after.
    #[arg(long)]
    pub stats_clear: bool,
}

impl Default for ObserveArgs {
    /// What the command line gives when none of these flags is used (clap's defaults).
    fn default() -> Self {
        ObserveArgs {
            trace: None,
            trace_out: None,
            trace_format: TraceFormat::default(),
            trace_hist: Vec::new(),
            trace_buffer: DEFAULT_RING_ENTRIES,
            stats: false,
            stats_out: None,
            stats_decode: None,
            stats_clear: false,
        }
    }
}

fn parse_format(s: &str) -> Result<TraceFormat, String> {
    s.parse().map_err(|e: TraceError| e.to_string())
}

fn parse_hist(s: &str) -> Result<HistSpec, String> {
    s.parse().map_err(|e: TraceError| e.to_string())
}

impl ObserveArgs {
    /// Whether statistics were asked for.
    pub fn wants_stats(&self) -> bool {
        self.stats || self.stats_decode.is_some() || self.stats_out.is_some()
    }

    /// Whether statistics are printed decoded.
    pub fn decoded(&self) -> bool {
        self.stats_decode.is_some()
    }

    /// The snapshot files given to `--stats-decode`, if the user asked to decode files
    /// rather than a run.
    pub fn files_to_decode(&self) -> Option<&[PathBuf]> {
        self.stats_decode.as_deref().filter(|f| !f.is_empty())
    }

    /// Whether the user asked for the event catalogue (`--trace list`).
    pub fn wants_event_list(&self) -> bool {
        self.trace.as_deref() == Some("list")
    }

    /// Check how the flags combine: refuse what would be silently ignored or clamped.
    pub fn validate(&self) -> Result<(), ObserveArgsError> {
        if self.trace_out.is_some() && self.trace.is_none() {
            return Err(ObserveArgsError::TraceOutWithoutTrace);
        }
        if let Some(events) = &self.trace {
            let set = EventSet::parse(events).map_err(ObserveArgsError::Events)?;
            if set.is_empty() {
                return Err(ObserveArgsError::NoEvents(events.clone()));
            }
        }
        if self.trace_buffer == 0 {
            return Err(ObserveArgsError::EmptyRing);
        }
        Ok(())
    }

    /// Create the files these flags write (`--stats-out`, `--trace-out`), before the run.
    pub fn open_outputs(&self) -> Result<ObserveOutputs, OutputError> {
        let open = |what, path: &Option<PathBuf>| {
            path.as_deref()
                .map(|p| OutputFile::create(what, p))
                .transpose()
        };
        Ok(ObserveOutputs {
            stats_out: open("--stats-out file", &self.stats_out)?,
            trace_out: open("--trace-out file", &self.trace_out)?,
        })
    }
}

/// The observability flags' output files, created before the run by
/// [`ObserveArgs::open_outputs`].
#[derive(Debug, Default)]
pub struct ObserveOutputs {
    /// `--stats-out`: the run's final statistics block.
    pub stats_out: Option<OutputFile>,
    /// `--trace-out`: the trace records.
    pub trace_out: Option<OutputFile>,
}

/// What `--stats-decode FILE [FILE]` prints: the decoded text, and the counters that went
/// backwards between the two snapshots (worth a warning: their difference means nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// The decoded snapshot or difference.
    pub text: String,
    /// Counters smaller in the second snapshot than in the first.
    pub regressions: Vec<Regression>,
}

/// One line warning that counters went backwards between two snapshots, naming the first
/// few; `None` when none did.
pub fn backwards_warning(regressions: &[Regression]) -> Option<String> {
    if regressions.is_empty() {
        return None;
    }
    let examples: Vec<String> = regressions
        .iter()
        .take(3)
        .map(|r| format!("{} {} {} -> {}", r.line, r.field, r.before, r.after))
        .collect();
    let more = if regressions.len() > examples.len() {
        ", ..."
    } else {
        ""
    };
    Some(format!(
        "warning: {} counter{} went backwards ({}{more}): the snapshots are swapped or from \
         different boots, so the difference is meaningless",
        regressions.len(),
        if regressions.len() == 1 { "" } else { "s" },
        examples.join(", ")
    ))
}

/// Decode one stat snapshot, or the difference of two (`--stats-decode FILE [FILE]`).
pub fn decode_files(files: &[PathBuf]) -> Result<Decoded, ObserveError> {
    let read = |p: &PathBuf| -> Result<StatFile, ObserveError> {
        let text = if p.as_os_str() == "-" {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut s).map(|_| s)
        } else {
            std::fs::read_to_string(p)
        }
        .map_err(|source| ObserveError::Read {
            path: p.clone(),
            source,
        })?;
        StatFile::parse(&text).map_err(|source| ObserveError::Decode {
            path: p.clone(),
            source,
        })
    };
    match files {
        [one] => Ok(Decoded {
            text: read(one)?.decode(),
            regressions: Vec::new(),
        }),
        [before, after] => {
            let diff = StatDiff::between(&read(before)?, &read(after)?);
            Ok(Decoded {
                text: diff.decode(),
                regressions: diff.regressions().to_vec(),
            })
        }
        _ => Ok(Decoded {
            text: String::new(),
            regressions: Vec::new(),
        }),
    }
}

/// The event catalogue, for `--trace list`.
pub fn event_list() -> String {
    registry::render_list()
}

/// The observability flags do not make sense as given (a usage error).
#[derive(Debug, Error)]
pub enum ObserveArgsError {
    /// `--trace-out` without `--trace`: there would be nothing to write.
    #[error("--trace-out needs --trace EVENTS (the events to write; --trace list shows them)")]
    TraceOutWithoutTrace,
    /// `--trace` names an event that does not exist.
    #[error("--trace: {0}")]
    Events(TraceError),
    /// `--trace` selects no event (`""`, `",,,"`, only exclusions).
    #[error("--trace '{0}' selects no events (--trace list shows them)")]
    NoEvents(String),
    /// `--trace-buffer 0`.
    #[error("--trace-buffer 0: the trace ring needs at least 1 entry per thread")]
    EmptyRing,
}

/// Something the observability layer could not do.
#[derive(Debug, Error)]
pub enum ObserveError {
    /// Starting or finishing the trace failed.
    #[error("--trace: {0}")]
    Trace(#[from] TraceError),
    /// The host's statistics could not be read or cleared.
    #[error("--stats: {0}")]
    HostStats(#[from] HostStatsError),
    /// The run's directory could not be synced before the final reading.
    #[error("--stats: syncfs {} before the final reading: {source}", path.display())]
    Syncfs {
        /// The directory.
        path: PathBuf,
        /// What the host said.
        source: TargetError,
    },
    /// A snapshot to decode could not be read.
    #[error("--stats-decode {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A snapshot to decode is not stat text.
    #[error("--stats-decode {}: {source}", path.display())]
    Decode {
        /// The file.
        path: PathBuf,
        /// What did not parse.
        source: crate::fs::stats::decode::DecodeError,
    },
    /// Writing statistics failed.
    #[error("--stats-out {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// What watches a run: its trace session and its XFS statistics. Every binary has exactly
/// one, started by the tool skeleton (`crate::cli::tool`) after the backend is open and
/// finished after the engine returns; an engine with loops tells it where each loop ends.
pub struct Observer {
    args: ObserveArgs,
    source: StatsSource,
    stats_out: Option<OutputFile>,
    session: Option<Session>,
    /// Counters at the start (after clearing, when cleared).
    start: Option<StatFile>,
    /// Counters at the end of the previous loop.
    last: Option<StatFile>,
    /// The last finished loop's block, held until it is known not to be the only loop.
    pending: Option<(u64, String)>,
    /// Loops finished so far.
    loops: u64,
}

impl Observer {
    /// Clear/read the statistics and start tracing, as the flags ask, writing to the files
    /// created earlier by [`ObserveArgs::open_outputs`].
    pub fn start(
        args: &ObserveArgs,
        source: StatsSource,
        outputs: ObserveOutputs,
    ) -> Result<Observer, ObserveError> {
        let mut obs = Observer {
            args: args.clone(),
            source,
            stats_out: outputs.stats_out,
            session: None,
            start: None,
            last: None,
            pending: None,
            loops: 0,
        };
        if args.wants_stats() {
            match &obs.source {
                StatsSource::Lab(m) => m.mount().clear(),
                StatsSource::Host { scope, .. } if args.stats_clear => scope.clear()?,
                StatsSource::Host { .. } => {}
                // The mount's own counters: clearing them needs no privilege.
                StatsSource::Files(dir) => clear_stats_at(&dir.join("stats_clear"))?,
            }
            let now = obs.read()?;
            obs.last = Some(now.clone());
            obs.start = Some(now);
        }
        let events = args.trace.clone().unwrap_or_default();
        if !events.is_empty() || !args.trace_hist.is_empty() {
            let cfg = TraceConfig {
                events,
                format: args.trace_format,
                out: None,
                ring_entries_per_thread: args.trace_buffer,
                histograms: args.trace_hist.clone(),
            };
            obs.session = Some(match outputs.trace_out {
                Some(out) => cfg.start_into(out.path, out.file)?,
                None => cfg.start()?,
            });
        }
        Ok(obs)
    }

    fn read(&self) -> Result<StatFile, ObserveError> {
        Ok(match &self.source {
            StatsSource::Lab(m) => StatFile::from(&m.mount().snapshot()),
            StatsSource::Host { scope, .. } => scope.read()?,
            StatsSource::Files(dir) => read_stats_from(&dir.join("stats"))?,
        })
    }

    /// Render a block (raw, and decoded when asked).
    fn render(&self, diff: &StatDiff) -> String {
        if self.args.decoded() {
            diff.decode()
        } else {
            diff.render_raw()
        }
    }

    /// Loop `n` (1-based) of a tool with loops is about to start: the previous loop was not
    /// the only one, so its block is printed now.
    pub fn loop_started(&mut self, _n: u64) -> Result<(), ObserveError> {
        self.print_pending();
        Ok(())
    }

    /// Loop `n` (1-based) of a tool with loops has ended: take that loop's statistics. They
    /// are printed when the next loop starts, or at the end if there was more than one loop;
    /// a run of one loop prints one block, the run's (it would be the same twice).
    pub fn loop_finished(&mut self, n: u64) -> Result<(), ObserveError> {
        self.loops += 1;
        if !self.args.wants_stats() {
            return Ok(());
        }
        let now = self.read()?;
        let last = self
            .last
            .replace(now.clone())
            .unwrap_or_else(|| now.clone());
        self.print_pending();
        self.pending = Some((n, self.render(&StatDiff::between(&last, &now))));
        Ok(())
    }

    fn print_pending(&mut self) {
        if let Some((n, block)) = self.pending.take() {
            eprint!("# xfs stats for loop {n}\n{block}");
        }
    }

    /// End of run: print the run's statistics and finish the trace (its records go to
    /// `--trace-out` or stderr; histograms to stderr). Returns the trace summary, if traced.
    pub fn finish(mut self) -> Result<Option<TraceSummary>, ObserveError> {
        if self.loops > 1 {
            self.print_pending();
        }
        if self.args.wants_stats() {
            let (now, host_note) = match &self.source {
                StatsSource::Lab(_) | StatsSource::Files(_) => (self.read()?, None),
                StatsSource::Host { scope, dirs } => {
                    // The kernel finishes a run's work after the run: write-back completes
                    // and unlinked inodes are inactivated in the background. syncfs, then
                    // read until the counters stop moving.
                    for dir in dirs {
                        HostTarget::new()
                            .syncfs(dir)
                            .map_err(|source| ObserveError::Syncfs {
                                path: dir.clone(),
                                source,
                            })?;
                    }
                    let (now, settled) = settle(scope, SETTLE_TIMEOUT)?;
                    (now, Some(format!("# {}; {settled}\n", scope.describe())))
                }
            };
            let start = self.start.take().unwrap_or_else(|| now.clone());
            let diff = StatDiff::between(&start, &now);
            eprint!(
                "# xfs stats for the run\n{}{}",
                host_note.unwrap_or_default(),
                self.render(&diff)
            );
            // Only the host's counters can step back during a run (a stats_clear by
            // someone else); the block is then not the run's.
            if let Some(w) = backwards_warning(diff.regressions()) {
                eprintln!("# {w}");
            }
            if let Some(out) = &mut self.stats_out {
                let write = out
                    .file
                    .write_all(diff.render_raw().as_bytes())
                    .and_then(|()| out.file.flush());
                write.map_err(|source| ObserveError::Write {
                    path: out.path.clone(),
                    source,
                })?;
            }
        }
        let Some(session) = self.session.take() else {
            return Ok(None);
        };
        let summary = session.finish()?;
        for h in &summary.histograms {
            eprint!("# histogram {}\n{}", h.spec, h.render_table());
        }
        Ok(Some(summary))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::stats::host::{GlobalReason, HostStatsScope};
    use crate::fs::stats::{MountStats, Stat};
    use std::sync::Arc;

    #[test]
    fn lab_stats_are_cleared_at_start_and_reported_as_the_runs_difference() {
        let m = Arc::new(MountStats::new());
        m.add(Stat::DirCreate, 5);
        let args = ObserveArgs {
            stats: true,
            ..ObserveArgs::default()
        };
        let obs = Observer::start(
            &args,
            StatsSource::Lab(Arc::clone(&m)),
            ObserveOutputs::default(),
        )
        .unwrap();
        assert_eq!(
            m.mount().snapshot().get(Stat::DirCreate),
            0,
            "cleared like stats_clear"
        );
        m.add(Stat::DirCreate, 3);
        let now = obs.read().unwrap();
        let diff = StatDiff::between(obs.start.as_ref().unwrap(), &now);
        assert_eq!(diff.file().field("dir", "create"), Some(3));
        obs.finish().unwrap();
    }

    #[test]
    fn nothing_is_read_or_started_without_flags() {
        let obs = Observer::start(
            &ObserveArgs::default(),
            StatsSource::Host {
                scope: HostStatsScope::Global(GlobalReason::NoDirectory),
                dirs: Vec::new(),
            },
            ObserveOutputs::default(),
        )
        .unwrap();
        assert!(obs.start.is_none() && obs.session.is_none());
        assert!(obs.finish().unwrap().is_none());
    }

    #[test]
    fn decode_files_decodes_one_snapshot_or_the_difference_of_two() {
        let dir = tempfile::tempdir().unwrap();
        let m = MountStats::new();
        let a = dir.path().join("a");
        std::fs::write(&a, m.mount().snapshot().render()).unwrap();
        m.add(Stat::DirCreate, 42);
        let b = dir.path().join("b");
        std::fs::write(&b, m.mount().snapshot().render()).unwrap();
        assert!(
            decode_files(std::slice::from_ref(&b))
                .unwrap()
                .text
                .contains("create = 42")
        );
        let diff = decode_files(&[a.clone(), b.clone()]).unwrap();
        assert!(diff.text.contains("create = 42"), "{}", diff.text);
        assert!(diff.regressions.is_empty());
        let swapped = decode_files(&[b, a.clone()]).unwrap();
        let warning = backwards_warning(&swapped.regressions).expect("a warning");
        assert_eq!(
            warning,
            "warning: 1 counter went backwards (dir create 42 -> 0): the snapshots are \
             swapped or from different boots, so the difference is meaningless"
        );
        std::fs::write(&a, "dir x y\n").unwrap();
        let e = decode_files(&[a]).unwrap_err().to_string();
        assert!(e.starts_with("--stats-decode"), "{e}");
    }

    #[test]
    fn default_is_what_the_command_line_gives_without_these_flags() {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            observe: ObserveArgs,
        }
        let parsed = <Cli as clap::Parser>::try_parse_from(["prog"]).unwrap();
        assert_eq!(parsed.observe, ObserveArgs::default());
        assert!(ObserveArgs::default().validate().is_ok());
    }

    #[test]
    fn decode_implies_stats() {
        let a = ObserveArgs {
            stats_decode: Some(Vec::new()),
            ..ObserveArgs::default()
        };
        assert!(a.wants_stats());
        assert!(
            ObserveArgs {
                trace: Some("list".into()),
                ..ObserveArgs::default()
            }
            .wants_event_list()
        );
        assert!(event_list().contains("xfs_log_force"));
    }
}
