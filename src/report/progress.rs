//! A progress bar for long runs, on stderr, only where a person is watching.
//!
//! A [`Ticker`] polls a [`Position`] function ten times a second from its own thread and, once
//! the run has gone on longer than a delay (one second for interactive use), draws an
//! `indicatif` bar naming the phase the work is in (creating, syncing, unlinking...) with an
//! estimate of the time left. [`Ticker::start_if_terminal`] starts nothing at all when stderr
//! is not a terminal, so pipes, logs and tests see no output and pay no thread. Stopping (or
//! dropping) the ticker clears the bar before the caller prints the phase's result.
//!
//! The estimate is the phase's work left at the phase's average rate so far (items done
//! since the phase began over the time since it began), so it is honest from the first
//! poll; indicatif's own estimate starts from a bar created with a second's work already
//! done and reads that jump as a near-infinite rate, which is why it used to be far too low
//! early on. A phase with nothing counted yet shows no estimate.

use std::io::IsTerminal;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How often the position is polled.
const POLL: Duration = Duration::from_millis(100);

/// Where a run is: the phase it is in and how far through that phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// The phase, in a word (`creating`, `syncing`, `unlinking`).
    pub phase: &'static str,
    /// Items done in this phase.
    pub done: u64,
    /// Items this phase has (0: not counted, e.g. one sync() call).
    pub total: u64,
}

/// Time left for `remaining` items at the rate of `done` items in `elapsed` (the phase's
/// average so far); `None` until something was done.
pub fn eta(done: u64, remaining: u64, elapsed: Duration) -> Option<Duration> {
    if done == 0 || elapsed.is_zero() {
        return None;
    }
    let secs = elapsed.as_secs_f64() * remaining as f64 / done as f64;
    Duration::try_from_secs_f64(secs).ok()
}

/// A duration as a person reads a countdown: `42s`, `3m05s`, `1h02m`.
pub fn format_eta(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// What the bar says after the counts: the phase and, once there is a rate, the time left.
fn message(phase: &str, done_in_phase: u64, remaining: u64, elapsed: Duration) -> String {
    match (eta(done_in_phase, remaining, elapsed), phase.is_empty()) {
        (Some(d), false) => format!("{phase}, eta {}", format_eta(d)),
        (Some(d), true) => format!("eta {}", format_eta(d)),
        (None, _) => phase.to_string(),
    }
}

/// A running progress display (see the module docs).
#[derive(Debug)]
pub struct Ticker {
    stop: Option<mpsc::Sender<()>>,
    handle: Option<JoinHandle<()>>,
}

impl Ticker {
    /// Start a ticker for one phase of `total` items (`position` says how many are done),
    /// drawing on stderr after one second, if stderr is a terminal.
    pub fn start_if_terminal(
        label: String,
        total: u64,
        position: impl Fn() -> u64 + Send + 'static,
    ) -> Option<Ticker> {
        Ticker::start_phased_if_terminal(label, move || Position {
            phase: "",
            done: position(),
            total,
        })
    }

    /// Start a ticker for work in phases (`position` says which phase and how far into it),
    /// drawing on stderr after one second, if stderr is a terminal.
    pub fn start_phased_if_terminal(
        label: String,
        position: impl Fn() -> Position + Send + 'static,
    ) -> Option<Ticker> {
        if !std::io::stderr().is_terminal() {
            return None;
        }
        Ticker::start(
            label,
            position,
            ProgressDrawTarget::stderr(),
            Duration::from_secs(1),
        )
        .ok()
    }

    /// Start a ticker on `target` that shows its bar once `delay` has passed.
    pub fn start(
        label: String,
        position: impl Fn() -> Position + Send + 'static,
        target: ProgressDrawTarget,
        delay: Duration,
    ) -> std::io::Result<Ticker> {
        let (tx, rx) = mpsc::channel::<()>();
        let handle = std::thread::Builder::new()
            .name("progress".into())
            .spawn(move || {
                let started = Instant::now();
                let mut target = Some(target);
                let mut bar: Option<ProgressBar> = None;
                // The phase being timed: its name, when it was first seen, and its count then.
                let mut phase: Option<(&'static str, Instant, u64)> = None;
                // A message or a dropped sender both mean stop.
                while let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(POLL) {
                    let now = position();
                    let (name, since, at_start) = match phase {
                        Some(p) if p.0 == now.phase => p,
                        _ => {
                            let p = (now.phase, Instant::now(), now.done);
                            phase = Some(p);
                            p
                        }
                    };
                    if bar.is_none()
                        && started.elapsed() >= delay
                        && let Some(t) = target.take()
                    {
                        bar = Some(new_bar(&label, t));
                    }
                    if let Some(b) = &bar {
                        b.set_length(now.total);
                        b.set_position(now.done);
                        b.set_message(message(
                            name,
                            now.done.saturating_sub(at_start),
                            now.total.saturating_sub(now.done),
                            since.elapsed(),
                        ));
                    }
                }
                if let Some(b) = bar {
                    b.finish_and_clear();
                }
            })?;
        Ok(Ticker {
            stop: Some(tx),
            handle: Some(handle),
        })
    }

    /// Stop polling and clear the bar.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn new_bar(label: &str, target: ProgressDrawTarget) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(0), target);
    if let Ok(style) =
        ProgressStyle::with_template("{prefix} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}")
    {
        bar.set_style(style);
    }
    bar.set_prefix(label.to_string());
    bar
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    fn counting(polls: &Arc<AtomicU64>) -> impl Fn() -> Position + Send + 'static {
        let p = Arc::clone(polls);
        move || Position {
            phase: "creating",
            done: p.fetch_add(1, Ordering::SeqCst),
            total: 10,
        }
    }

    #[test]
    fn the_estimate_is_the_work_left_at_the_phases_average_rate() {
        // 100 files in 10 s: 900 more take 90 s.
        assert_eq!(
            eta(100, 900, Duration::from_secs(10)),
            Some(Duration::from_secs(90))
        );
        assert_eq!(eta(0, 900, Duration::from_secs(10)), None, "no rate yet");
        assert_eq!(eta(5, 0, Duration::from_secs(1)), Some(Duration::ZERO));
        assert_eq!(
            message("creating", 100, 900, Duration::from_secs(10)),
            "creating, eta 1m30s"
        );
        assert_eq!(message("syncing", 0, 0, Duration::from_secs(3)), "syncing");
        assert_eq!(
            message("", 1, 1, Duration::from_secs(3)),
            "eta 3s",
            "one phase"
        );
        assert_eq!(format_eta(Duration::from_secs(42)), "42s");
        assert_eq!(format_eta(Duration::from_secs(3 * 3600 + 125)), "3h02m");
    }

    #[test]
    fn ticker_polls_after_the_delay_and_stops_promptly() {
        let polls = Arc::new(AtomicU64::new(0));
        let t = Ticker::start(
            "loop 1".into(),
            counting(&polls),
            ProgressDrawTarget::hidden(),
            Duration::ZERO,
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(350));
        let started = Instant::now();
        t.stop();
        assert!(started.elapsed() < Duration::from_secs(1));
        assert!(polls.load(Ordering::SeqCst) >= 1);
    }

    #[test]
    fn ticker_times_the_phase_from_its_first_poll_before_the_bar_shows() {
        let polls = Arc::new(AtomicU64::new(0));
        let t = Ticker::start(
            "x".into(),
            counting(&polls),
            ProgressDrawTarget::hidden(),
            Duration::from_secs(60),
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(250));
        drop(t);
        // The phase is timed from the first poll, but no bar was made.
        assert!(polls.load(Ordering::SeqCst) >= 1);
    }
}
