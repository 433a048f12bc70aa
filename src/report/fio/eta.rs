//! fio's ETA line, shown on a terminal while jobs run (`eta.c`, `display_thread_status`):
//! `Jobs: 1 (f=1): [W(1)][45.0%][w=316MiB/s][w=5058 IOPS][eta 00m:06s]`.
//!
//! The rates are over the last interval between two calls; the percentage and the ETA come
//! from the bytes planned or, for time-based jobs, from the runtime.

use std::time::Duration;

use super::num2str::{Unit, num2str};

/// What the line shows.
#[derive(Debug, Clone, Copy)]
pub struct EtaInput {
    /// Clones running.
    pub running: usize,
    /// fio's one-letter state of the running clones (`W`, `R`, `M`, `w`, `r`, `m`).
    pub state: char,
    /// Done, 0.0..=1.0.
    pub done: f64,
    /// Read and write bytes per second over the last interval.
    pub rate: [u64; 2],
    /// Read and write I/Os per second over the last interval, if known.
    pub iops: [u64; 2],
    /// Time left.
    pub left: Duration,
}

/// fio's `[eta 00m:06s]` form (hours and days when needed).
pub fn eta_string(left: Duration) -> String {
    let s = left.as_secs();
    let (d, h, m, sec) = (s / 86400, (s / 3600) % 24, (s / 60) % 60, s % 60);
    if d > 0 {
        format!("{d}d:{h:02}h:{m:02}m:{sec:02}s")
    } else if h > 0 {
        format!("{h:02}h:{m:02}m:{sec:02}s")
    } else {
        format!("{m:02}m:{sec:02}s")
    }
}

/// The line, without a newline.
pub fn line(e: &EtaInput) -> String {
    let mut s = format!(
        "Jobs: {} (f={}): [{}({})][{:.1}%]",
        e.running,
        e.running,
        e.state,
        e.running,
        e.done * 100.0
    );
    let rate = |v: u64| num2str(v, 4, 1, true, Unit::BytePerSec);
    match (e.rate[0] > 0, e.rate[1] > 0) {
        (true, true) => s.push_str(&format!("[r={},w={}]", rate(e.rate[0]), rate(e.rate[1]))),
        (true, false) => s.push_str(&format!("[r={}]", rate(e.rate[0]))),
        (false, true) => s.push_str(&format!("[w={}]", rate(e.rate[1]))),
        (false, false) => {}
    }
    let iops = |v: u64| num2str(v, 4, 1, false, Unit::None);
    match (e.iops[0] > 0, e.iops[1] > 0) {
        (true, true) => s.push_str(&format!(
            "[r={},w={} IOPS]",
            iops(e.iops[0]),
            iops(e.iops[1])
        )),
        (true, false) => s.push_str(&format!("[r={} IOPS]", iops(e.iops[0]))),
        (false, true) => s.push_str(&format!("[w={} IOPS]", iops(e.iops[1]))),
        (false, false) => {}
    }
    s.push_str(&format!("[eta {}]", eta_string(e.left)));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_has_fios_shape() {
        let l = line(&EtaInput {
            running: 1,
            state: 'W',
            done: 0.45,
            rate: [0, 331_350_016],
            iops: [0, 5058],
            left: Duration::from_secs(6),
        });
        assert_eq!(
            l,
            "Jobs: 1 (f=1): [W(1)][45.0%][w=316MiB/s][w=5058 IOPS][eta 00m:06s]"
        );
        assert_eq!(eta_string(Duration::from_secs(3 * 3600 + 5)), "03h:00m:05s");
    }
}
