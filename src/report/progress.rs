//! A progress bar for long phases, on stderr, only where a person is watching.
//!
//! A [`Ticker`] polls a position function ten times a second from its own thread and, once the
//! phase has run longer than a delay (one second for interactive use), draws an `indicatif`
//! bar. [`Ticker::start_if_terminal`] starts nothing at all when stderr is not a terminal, so
//! pipes, logs and tests see no output and pay no thread. Stopping (or dropping) the ticker
//! clears the bar before the caller prints the phase's result.

use std::io::IsTerminal;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How often the position is polled.
const POLL: Duration = Duration::from_millis(100);

/// A running progress display (see the module docs).
#[derive(Debug)]
pub struct Ticker {
    stop: Option<mpsc::Sender<()>>,
    handle: Option<JoinHandle<()>>,
}

impl Ticker {
    /// Start a ticker drawing on stderr after one second, if stderr is a terminal.
    pub fn start_if_terminal(
        label: String,
        total: u64,
        position: impl Fn() -> u64 + Send + 'static,
    ) -> Option<Ticker> {
        if !std::io::stderr().is_terminal() {
            return None;
        }
        Ticker::start(
            label,
            total,
            position,
            ProgressDrawTarget::stderr(),
            Duration::from_secs(1),
        )
        .ok()
    }

    /// Start a ticker on `target` that shows its bar once `delay` has passed.
    pub fn start(
        label: String,
        total: u64,
        position: impl Fn() -> u64 + Send + 'static,
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
                // A message or a dropped sender both mean stop.
                while let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(POLL) {
                    if bar.is_none()
                        && started.elapsed() >= delay
                        && let Some(t) = target.take()
                    {
                        bar = Some(new_bar(&label, total, t));
                    }
                    if let Some(b) = &bar {
                        b.set_position(position());
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

fn new_bar(label: &str, total: u64, target: ProgressDrawTarget) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(total), target);
    if let Ok(style) = ProgressStyle::with_template(
        "{prefix} [{elapsed_precise}] {wide_bar} {pos}/{len} files (eta {eta})",
    ) {
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

    #[test]
    fn ticker_polls_after_the_delay_and_stops_promptly() {
        let polls = Arc::new(AtomicU64::new(0));
        let p = Arc::clone(&polls);
        let t = Ticker::start(
            "loop 1".into(),
            10,
            move || p.fetch_add(1, Ordering::SeqCst),
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
    fn ticker_before_its_delay_never_polls() {
        let polls = Arc::new(AtomicU64::new(0));
        let p = Arc::clone(&polls);
        let t = Ticker::start(
            "x".into(),
            10,
            move || p.fetch_add(1, Ordering::SeqCst),
            ProgressDrawTarget::hidden(),
            Duration::from_secs(60),
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(250));
        drop(t);
        assert_eq!(polls.load(Ordering::SeqCst), 0);
    }
}
