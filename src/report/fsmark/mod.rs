//! Reporting an fs_mark run: the [`Printer`] (the engine's [`Reporter`]) writes fs_mark's text to stdout and the
//! log file, keeps the `--json` document up to date, shows progress on a terminal, and prints
//! the summary and the optional latency table at the end.
//!
//! Order of output, as fs_mark: the header goes to stdout, then to the log; each row goes to
//! stdout, then to the log, both flushed at once so a watcher sees rows as they finish. The
//! summary goes to stdout only. Extensions come after fs_mark's text and never alter it.

pub mod json;
pub mod text;

use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;

use crate::report::latency;
use crate::report::progress::{Position, Ticker};
use crate::workload::fsmark::{
    LoopReport, LoopStart, Reporter, RunEnd, RunOutcome, RunStart, SyscallKind,
};
use text::Destination;

/// How an fs_mark run is reported: everything on its command line that is not the engine's
/// business.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportOptions {
    /// `-v`.
    pub verbose: bool,
    /// `-l`.
    pub log_file: PathBuf,
    /// `--json`.
    pub json: Option<PathBuf>,
    /// `--latency`.
    pub latency_table: bool,
}

/// Writes an fs_mark run's output (see the module docs).
pub struct Printer<W: Write> {
    out: W,
    log: File,
    opts: ReportOptions,
    argv: Vec<String>,
    file_size: u64,
    json: Option<json::Document>,
    target: String,
    backend_line: Option<String>,
    show_progress: bool,
    ticker: Option<Ticker>,
}

impl<W: Write> Printer<W> {
    /// A printer writing to `out` and appending to `log`, the `-l` file (opened by the
    /// caller before the run, as fs_mark opens it first thing). `argv` is echoed in the
    /// header; `target` names the target in the JSON; `show_progress` allows a progress bar
    /// on a terminal.
    pub fn new(
        out: W,
        log: File,
        opts: ReportOptions,
        argv: Vec<String>,
        target: String,
        show_progress: bool,
    ) -> Printer<W> {
        Printer {
            out,
            log,
            opts,
            argv,
            file_size: 0,
            json: None,
            target,
            backend_line: None,
            show_progress,
            ticker: None,
        }
    }

    /// Add a `#\tBackend: ...` line to the header (labfs runs name their filesystem, device
    /// and options; host runs print fs_mark's header unchanged).
    pub fn with_backend_line(mut self, line: Option<String>) -> Self {
        self.backend_line = line;
        self
    }

    fn write_json(&self) -> io::Result<()> {
        match (&self.json, &self.opts.json) {
            (Some(doc), Some(path)) => crate::report::json::write_atomic(path, doc)
                .map_err(|e| io::Error::new(e.kind(), format!("writing {}: {e}", path.display()))),
            _ => Ok(()),
        }
    }

    fn stop_ticker(&mut self) {
        if let Some(t) = self.ticker.take() {
            t.stop();
        }
    }

    /// Print the end of the run: fill-mode's stop line, the summary, the latency table, and
    /// the final JSON.
    pub fn finish(&mut self, outcome: &RunOutcome) -> io::Result<()> {
        self.stop_ticker();
        if let RunEnd::FilesystemFull { dir, files } = &outcome.end {
            writeln!(
                self.out,
                "Insufficient free space in {dir} to create {files} new files, exiting"
            )?;
        }
        text::write_summary(&mut self.out, &outcome.summary)?;
        if self.opts.latency_table
            && let Some(l) = &outcome.latency
        {
            let rows = SyscallKind::ALL.map(|k| (k.name(), l.get(k)));
            writeln!(
                self.out,
                "\nSystem call latency, all iterations:\n{}",
                latency::table(rows, "us")
            )?;
        }
        self.out.flush()?;
        if let Some(doc) = &mut self.json {
            doc.finish(outcome);
        }
        self.write_json()
    }
}

impl<W: Write> Reporter for Printer<W> {
    fn run_started(&mut self, start: &RunStart<'_>) -> io::Result<()> {
        let (config, verbose) = (start.config, self.opts.verbose);
        self.file_size = config.file_size;
        text::write_header(
            &mut self.out,
            &self.argv,
            config,
            start.wall,
            verbose,
            Destination::Stdout,
            self.backend_line.as_deref(),
        )?;
        self.out.flush()?;
        text::write_header(
            &mut self.log,
            &self.argv,
            config,
            start.wall,
            verbose,
            Destination::LogFile,
            self.backend_line.as_deref(),
        )?;
        if self.opts.json.is_some() {
            self.json = Some(json::Document::new(
                self.argv.clone(),
                self.target.clone(),
                config,
            ));
        }
        self.write_json()
    }

    fn loop_started(&mut self, start: &LoopStart) -> io::Result<()> {
        self.stop_ticker();
        if self.show_progress {
            let p = start.progress.clone();
            self.ticker = Ticker::start_phased_if_terminal(
                format!("fsmark loop {}", start.index),
                move || {
                    let now = p.snapshot();
                    Position {
                        phase: now.phase.name(),
                        done: now.done,
                        total: now.total,
                    }
                },
            );
        }
        Ok(())
    }

    fn loop_finished(&mut self, r: &LoopReport) -> io::Result<()> {
        self.stop_ticker();
        let verbose = self.opts.verbose;
        text::write_row(
            &mut self.out,
            r.fs_use_pct,
            r.count,
            self.file_size,
            &r.stats,
            verbose,
        )?;
        self.out.flush()?;
        text::write_row(
            &mut self.log,
            r.fs_use_pct,
            r.count,
            self.file_size,
            &r.stats,
            verbose,
        )?;
        if let Some(doc) = &mut self.json {
            doc.push_loop(r);
        }
        self.write_json()
    }
}
