//! A latency model that really delays I/O, so that what a cache flush costs, and therefore
//! what fsync batching (group commit) saves, shows up in wall-clock results.
//!
//! # The model
//!
//! Each device (each stripe member) is one queue with three parameters:
//!
//! - `bw`: transfers are serialised at `bw` bytes/s on a busy-until clock. An I/O of `len`
//!   bytes arriving at `now` occupies the channel from `max(now, busy_until)` for
//!   `len / bw`; that is what makes one big transfer, or many concurrent small ones, take
//!   time in proportion to their bytes.
//! - `lat`: every I/O also pays `lat` after its transfer slot. Latencies overlap (they are not
//!   on the busy clock): N concurrent 4 KiB writes take about `lat`, not `N * lat`, as on a
//!   device with a deep queue.
//! - `flush`: a cache flush first waits for every I/O booked so far to complete, then costs
//!   `flush`, during which the channel is busy (later transfers and flushes queue behind it).
//!   A FUA write pays `flush` on top of its own completion, without occupying the channel:
//!   the device writes that one request through its cache.
//!
//! Reads pay `bw` and `lat` too. A model is a floor, not an addition: the real I/O runs
//! first and the caller then waits until the modelled completion time, so a device that is
//! slower than its model shows its own speed.
//!
//! # Waiting
//!
//! [`wait_until`] sleeps for the bulk of a wait and spins (with [`std::hint::spin_loop`])
//! only for the last [`SPIN_WINDOW`] (50 µs). Sleeping alone is too coarse: `thread::sleep`
//! on Linux wakes up to the thread's timer slack (50 µs by default) plus a scheduler wake-up
//! late, which would add tens of microseconds to every modelled 20 µs latency and distort
//! exactly the effects the model exists to show. Spinning alone would burn a core per waiting
//! thread, on machines where cores are scarce (and a spinner that exhausts its time slice is
//! descheduled for milliseconds). So a waiting thread first lowers its own timer slack to
//! 1 µs (`prctl(PR_SET_TIMERSLACK)`, once per thread; it only makes that thread's sleeps more
//! punctual), sleeps until the window, and spins inside it: waits end within a few
//! microseconds of the deadline unless the machine is overloaded, at a cost of at most
//! `SPIN_WINDOW` of CPU per I/O. Measured on the 2-core development VM under load, a
//! 1 µs-slack sleep overshot by 22-28 µs on average (p99 about 50 µs), against 70-120 µs
//! (p99 170-440 µs) with the default slack; hence the 50 µs window.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::fs::dev::{BlockDev, DevError, IoReq, check_io};
use crate::units::{format_duration_spec, format_size_iec};

/// How long before a deadline [`wait_until`] stops sleeping and starts spinning: about the
/// 99th-percentile lateness of a sleep once the timer slack is 1 µs.
pub const SPIN_WINDOW: Duration = Duration::from_micros(50);

/// The parameters of one device's queue model (`lat=`, `bw=`, `flush=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LatencyParams {
    /// Per-I/O latency, overlapping between concurrent I/Os.
    pub lat: Duration,
    /// Transfer rate in bytes per second; `None` is unlimited.
    pub bw: Option<u64>,
    /// Cost of a cache flush (and the extra cost of a FUA write).
    pub flush: Duration,
}

impl LatencyParams {
    /// Whether a read through this model costs no time (no latency, no transfer rate).
    pub fn reads_free(&self) -> bool {
        self.lat.is_zero() && self.bw.is_none()
    }
}

impl LatencyParams {
    /// No delays at all.
    pub const NONE: LatencyParams = LatencyParams {
        lat: Duration::ZERO,
        bw: None,
        flush: Duration::ZERO,
    };

    /// Whether this model delays nothing (so the device need not be wrapped).
    pub fn is_none(&self) -> bool {
        self.lat.is_zero() && self.bw.is_none() && self.flush.is_zero()
    }

    /// How long `len` bytes occupy the channel at `bw`.
    pub fn transfer_time(&self, len: u64) -> Duration {
        match self.bw {
            Some(bw) if bw > 0 => {
                let ns = u128::from(len) * 1_000_000_000 / u128::from(bw);
                Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
            }
            _ => Duration::ZERO,
        }
    }

    /// The parameters for a report header: `" lat=20us bw=2GiB/s flush=100us"` (those set,
    /// each with a leading space), or an empty string.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        if !self.lat.is_zero() {
            out.push_str(&format!(" lat={}", format_duration_spec(self.lat)));
        }
        if let Some(bw) = self.bw {
            out.push_str(&format!(" bw={}/s", format_size_iec(bw)));
        }
        if !self.flush.is_zero() {
            out.push_str(&format!(" flush={}", format_duration_spec(self.flush)));
        }
        out
    }
}

#[derive(Debug)]
struct QueueState {
    /// When the transfer channel is next free.
    busy_until: Instant,
    /// The latest completion time booked so far (what a flush must wait for).
    last_done: Instant,
}

/// One device's queue: books each I/O and returns when it completes. Booking is separate
/// from waiting so that a stripe can book one request on several members and wait once, for
/// the slowest.
#[derive(Debug)]
pub struct QueueModel {
    params: LatencyParams,
    state: Mutex<QueueState>,
}

impl QueueModel {
    /// A queue that is idle now.
    pub fn new(params: LatencyParams) -> QueueModel {
        let now = Instant::now();
        QueueModel {
            params,
            state: Mutex::new(QueueState {
                busy_until: now,
                last_done: now,
            }),
        }
    }

    /// The parameters.
    pub fn params(&self) -> LatencyParams {
        self.params
    }

    /// Book a read or write of `len` bytes arriving at `now`; returns its completion time.
    pub fn book_io(&self, now: Instant, len: u64, fua: bool) -> Instant {
        let mut st = self.state.lock();
        let start = st.busy_until.max(now);
        let end = start + self.params.transfer_time(len);
        st.busy_until = end;
        let mut done = end + self.params.lat;
        if fua {
            done += self.params.flush;
        }
        st.last_done = st.last_done.max(done);
        done
    }

    /// Book a cache flush arriving at `now`; returns its completion time.
    pub fn book_flush(&self, now: Instant) -> Instant {
        let mut st = self.state.lock();
        let start = now.max(st.last_done).max(st.busy_until);
        let done = start + self.params.flush;
        st.busy_until = done;
        st.last_done = done;
        done
    }
}

/// Timer slack the waiting threads ask for: 1 µs instead of Linux's default 50 µs.
#[cfg(target_os = "linux")]
const TIMER_SLACK_NS: libc::c_ulong = 1_000;

/// Lower this thread's timer slack once, so its sleeps end close to their deadline.
fn tighten_timer_slack() {
    #[cfg(target_os = "linux")]
    {
        use std::cell::Cell;
        thread_local! {
            static DONE: Cell<bool> = const { Cell::new(false) };
        }
        DONE.with(|done| {
            if !done.replace(true) {
                // SAFETY: PR_SET_TIMERSLACK takes one unsigned long and only changes the
                // calling thread's timer slack; a failure leaves the default, which is safe.
                unsafe {
                    libc::prctl(libc::PR_SET_TIMERSLACK, TIMER_SLACK_NS, 0, 0, 0);
                }
            }
        });
    }
}

/// Block the calling thread until `deadline`: sleep while more than [`SPIN_WINDOW`] remains,
/// then spin. Returns at once if the deadline has passed. The first wait on a thread lowers
/// that thread's timer slack to 1 µs (see the module docs).
pub fn wait_until(deadline: Instant) {
    let mut slack_set = false;
    loop {
        let now = Instant::now();
        let Some(left) = deadline
            .checked_duration_since(now)
            .filter(|d| !d.is_zero())
        else {
            return;
        };
        if left > SPIN_WINDOW {
            if !slack_set {
                tighten_timer_slack();
                slack_set = true;
            }
            std::thread::sleep(left - SPIN_WINDOW);
        } else {
            std::hint::spin_loop();
        }
    }
}

/// Any device behind a [`QueueModel`].
pub struct LatencyDev {
    inner: Arc<dyn BlockDev>,
    model: QueueModel,
}

impl LatencyDev {
    /// Wrap `inner` in a queue with these parameters.
    pub fn new(inner: Arc<dyn BlockDev>, params: LatencyParams) -> LatencyDev {
        LatencyDev {
            inner,
            model: QueueModel::new(params),
        }
    }

    /// The wrapped device.
    pub fn inner(&self) -> &Arc<dyn BlockDev> {
        &self.inner
    }

    /// The queue model's parameters.
    pub fn params(&self) -> LatencyParams {
        self.model.params()
    }
}

impl BlockDev for LatencyDev {
    fn size(&self) -> u64 {
        self.inner.size()
    }

    fn sector_size(&self) -> u32 {
        self.inner.sector_size()
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<(), DevError> {
        let req = IoReq::read(offset, buf.len());
        check_io(self.size(), req, || self.describe())?;
        let done = self.model.book_io(Instant::now(), req.len, false);
        self.inner.read_at(buf, offset)?;
        wait_until(done);
        Ok(())
    }

    fn write_at(&self, buf: &[u8], offset: u64, fua: bool) -> Result<(), DevError> {
        let req = IoReq::write(offset, buf.len(), fua);
        check_io(self.size(), req, || self.describe())?;
        let done = self.model.book_io(Instant::now(), req.len, fua);
        self.inner.write_at(buf, offset, fua)?;
        wait_until(done);
        Ok(())
    }

    fn flush(&self) -> Result<(), DevError> {
        let done = self.model.book_flush(Instant::now());
        self.inner.flush()?;
        wait_until(done);
        Ok(())
    }

    fn reads_at_memory_speed(&self) -> bool {
        self.model.params().reads_free() && self.inner.reads_at_memory_speed()
    }

    fn describe(&self) -> String {
        format!(
            "{}{}",
            self.inner.describe(),
            self.model.params().describe()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(lat_us: u64, bw: Option<u64>, flush_us: u64) -> LatencyParams {
        LatencyParams {
            lat: Duration::from_micros(lat_us),
            bw,
            flush: Duration::from_micros(flush_us),
        }
    }

    #[test]
    fn transfer_time_is_bytes_over_rate() {
        let p = params(0, Some(1 << 20), 0);
        assert_eq!(p.transfer_time(1 << 20), Duration::from_secs(1));
        assert_eq!(p.transfer_time(512), Duration::from_nanos(488_281));
        assert_eq!(LatencyParams::NONE.transfer_time(1 << 30), Duration::ZERO);
    }

    #[test]
    fn transfers_serialise_but_latencies_overlap() {
        // 1 MiB/s: a 1 KiB transfer takes 976_562 ns.
        let m = QueueModel::new(params(100, Some(1 << 20), 0));
        let t0 = Instant::now();
        let xfer = m.params().transfer_time(1024);
        let a = m.book_io(t0, 1024, false);
        let b = m.book_io(t0, 1024, false);
        assert_eq!(a, t0 + xfer + Duration::from_micros(100));
        // b's transfer queues behind a's, but b does not also wait out a's latency.
        assert_eq!(b, t0 + xfer * 2 + Duration::from_micros(100));
    }

    #[test]
    fn latency_only_ios_complete_together() {
        let m = QueueModel::new(params(50, None, 0));
        let t0 = Instant::now();
        let done: Vec<Instant> = (0..8).map(|_| m.book_io(t0, 4096, false)).collect();
        assert!(done.iter().all(|&d| d == t0 + Duration::from_micros(50)));
    }

    #[test]
    fn flush_waits_for_outstanding_io_then_costs_flush_time() {
        let m = QueueModel::new(params(100, None, 30));
        let t0 = Instant::now();
        let w = m.book_io(t0, 4096, false);
        let f = m.book_flush(t0);
        assert_eq!(f, w + Duration::from_micros(30));
        // A transfer after the flush queues behind it.
        let after = m.book_io(t0, 4096, false);
        assert_eq!(after, f + Duration::from_micros(100));
        // Back-to-back flushes serialise.
        let f2 = m.book_flush(t0);
        assert_eq!(f2, after + Duration::from_micros(30));
    }

    #[test]
    fn fua_write_pays_flush_cost_without_blocking_the_channel() {
        let m = QueueModel::new(params(10, None, 40));
        let t0 = Instant::now();
        let fua = m.book_io(t0, 512, true);
        assert_eq!(fua, t0 + Duration::from_micros(50));
        let plain = m.book_io(t0, 512, false);
        assert_eq!(plain, t0 + Duration::from_micros(10));
    }

    #[test]
    fn wait_until_never_returns_early() {
        for us in [0u64, 5, 30, 150] {
            let deadline = Instant::now() + Duration::from_micros(us);
            wait_until(deadline);
            assert!(Instant::now() >= deadline);
        }
    }

    #[test]
    fn describe_lists_only_set_parameters() {
        assert_eq!(LatencyParams::NONE.describe(), "");
        assert_eq!(
            params(20, Some(2 << 30), 100).describe(),
            " lat=20us bw=2GiB/s flush=100us"
        );
        assert_eq!(params(0, None, 2000).describe(), " flush=2ms");
    }
}
