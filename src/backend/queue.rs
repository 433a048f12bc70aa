//! Asynchronous submission: several I/Os in flight from one thread.
//!
//! fio's queue-depth engines (libaio, io_uring) keep up to `iodepth` requests in flight:
//! submit, then reap completions when the queue is full. [`IoQueue`] is that seam. Each
//! target provides one through [`super::Target::io_queue`]:
//!
//! - on the host, Linux native AIO ([`super::aio`]), the kernel's `io_submit`/`io_getevents`;
//! - on labfs (and the test targets), a [`ThreadedQueue`]: a submission queue served by a pool
//!   of worker threads, each making the target's ordinary synchronous calls. Up to `depth`
//!   requests are outstanding and up to `min(depth, MAX_QUEUE_WORKERS)` execute at once, so
//!   labfs sees the same concurrency a kernel filesystem sees from an AIO or io_uring
//!   submitter whose requests are punted to workers.
//!
//! Requests own their buffers ([`IoBuf`], page-aligned so O_DIRECT works) and get them back
//! in the completion, so no borrow outlives a call even though the I/O does.

use std::alloc::{self, Layout};
use std::ops::{Deref, DerefMut};
use std::sync::mpsc;
use std::sync::{Arc, Mutex as StdMutex};
use std::thread::JoinHandle;

use nix::errno::Errno;

use super::{Fd, Result, Target, TargetError};

/// Alignment of I/O buffers: a page, enough for O_DIRECT on every Linux filesystem.
pub const IO_BUF_ALIGN: usize = 4096;

/// The most worker threads a [`ThreadedQueue`] starts, whatever the depth.
pub const MAX_QUEUE_WORKERS: usize = 64;

/// A page-aligned, zero-initialised byte buffer.
pub struct IoBuf {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
}

// SAFETY: IoBuf owns its allocation exclusively, like a Vec<u8>.
unsafe impl Send for IoBuf {}
// SAFETY: shared access only hands out &[u8].
unsafe impl Sync for IoBuf {}

impl IoBuf {
    /// A zeroed buffer of `len` bytes (at least one byte is allocated).
    pub fn zeroed(len: usize) -> IoBuf {
        let layout = Self::layout(len);
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let Some(ptr) = std::ptr::NonNull::new(raw) else {
            alloc::handle_alloc_error(layout)
        };
        IoBuf { ptr, len }
    }

    fn layout(len: usize) -> Layout {
        Layout::from_size_align(len.max(1), IO_BUF_ALIGN)
            .unwrap_or_else(|_| alloc::handle_alloc_error(Layout::new::<u8>()))
    }
}

impl Drop for IoBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `zeroed` with this layout.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), Self::layout(self.len)) }
    }
}

impl Deref for IoBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: ptr is valid for len initialised bytes while self lives.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for IoBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl std::fmt::Debug for IoBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "IoBuf({} bytes)", self.len)
    }
}

/// What a queued request does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoKind {
    /// pread into the buffer.
    Read,
    /// pwrite of the buffer.
    Write,
    /// fsync.
    Fsync,
    /// fdatasync.
    Fdatasync,
}

/// A request for an [`IoQueue`].
#[derive(Debug)]
pub struct IoRequest {
    /// The caller's tag, returned in the completion.
    pub token: u64,
    /// The file.
    pub fd: Fd,
    /// What to do.
    pub kind: IoKind,
    /// File offset (reads and writes).
    pub offset: u64,
    /// Data to write, or room to read into (its length is the transfer size).
    pub buf: IoBuf,
}

/// A finished request.
#[derive(Debug)]
pub struct IoCompletion {
    /// The request's tag.
    pub token: u64,
    /// Bytes transferred (0 for syncs), or the error.
    pub result: Result<usize>,
    /// The request's buffer, back to its owner.
    pub buf: IoBuf,
}

/// Which asynchronous interface a job asked for (fio's `ioengine`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueKind {
    /// Linux native AIO (`ioengine=libaio`).
    Libaio,
    /// io_uring (`ioengine=io_uring`).
    IoUring,
    /// fslab's worker-thread queue (`ioengine=fslab`), on any target.
    Threads,
}

/// Several I/Os in flight from one submitter.
pub trait IoQueue: Send {
    /// Start a request. It may run (even complete) before this returns.
    fn submit(&mut self, req: IoRequest) -> Result<()>;
    /// Wait until at least `min` requests have completed and move up to `max` completions
    /// into `out`; returns how many were moved.
    fn reap(&mut self, min: usize, max: usize, out: &mut Vec<IoCompletion>) -> Result<usize>;
    /// Requests submitted and not yet reaped.
    fn in_flight(&self) -> usize;
    /// Whether fsync/fdatasync may be queued with I/O. When false (Linux AIO in fio), the
    /// caller drains the queue and syncs synchronously, as fio's libaio engine does.
    fn queues_syncs(&self) -> bool;
    /// A short name for reports (`libaio`, `threads`).
    fn name(&self) -> &'static str;
}

fn execute(target: &dyn Target, req: &mut IoRequest) -> Result<usize> {
    match req.kind {
        IoKind::Read => target.pread(req.fd, &mut req.buf, req.offset),
        IoKind::Write => target.pwrite(req.fd, &req.buf, req.offset),
        IoKind::Fsync => target.fsync(req.fd).map(|()| 0),
        IoKind::Fdatasync => target.fdatasync(req.fd).map(|()| 0),
    }
}

/// A submission queue served by worker threads (see the module docs).
pub struct ThreadedQueue {
    submit_tx: Option<mpsc::Sender<IoRequest>>,
    done_rx: mpsc::Receiver<IoCompletion>,
    workers: Vec<JoinHandle<()>>,
    in_flight: usize,
}

impl ThreadedQueue {
    /// A queue of `depth` over `target` with `min(depth, MAX_QUEUE_WORKERS)` workers.
    pub fn new(target: Arc<dyn Target>, depth: u32) -> Result<ThreadedQueue> {
        let (submit_tx, submit_rx) = mpsc::channel::<IoRequest>();
        let (done_tx, done_rx) = mpsc::channel::<IoCompletion>();
        let submit_rx = Arc::new(StdMutex::new(submit_rx));
        let n = (depth.max(1) as usize).min(MAX_QUEUE_WORKERS);
        let mut workers = Vec::with_capacity(n);
        for i in 0..n {
            let rx = Arc::clone(&submit_rx);
            let tx = done_tx.clone();
            let t = Arc::clone(&target);
            let spawned = std::thread::Builder::new()
                .name(format!("ioq-{i}"))
                .spawn(move || {
                    loop {
                        // A poisoned lock means another worker panicked: stop serving.
                        let next = match rx.lock() {
                            Ok(guard) => guard.recv(),
                            Err(_) => return,
                        };
                        let Ok(mut req) = next else {
                            return;
                        };
                        let result = execute(t.as_ref(), &mut req);
                        let done = IoCompletion {
                            token: req.token,
                            result,
                            buf: req.buf,
                        };
                        if tx.send(done).is_err() {
                            return;
                        }
                    }
                });
            match spawned {
                Ok(h) => workers.push(h),
                Err(e) => {
                    return Err(TargetError::with_detail(
                        Errno::EAGAIN,
                        format!("cannot start I/O queue workers: {e}"),
                    ));
                }
            }
        }
        Ok(ThreadedQueue {
            submit_tx: Some(submit_tx),
            done_rx,
            workers,
            in_flight: 0,
        })
    }
}

impl IoQueue for ThreadedQueue {
    fn submit(&mut self, req: IoRequest) -> Result<()> {
        let tx = self.submit_tx.as_ref().ok_or(Errno::EBADF)?;
        tx.send(req)
            .map_err(|_| TargetError::with_detail(Errno::EIO, "I/O queue workers are gone"))?;
        self.in_flight += 1;
        Ok(())
    }

    fn reap(&mut self, min: usize, max: usize, out: &mut Vec<IoCompletion>) -> Result<usize> {
        let min = min.min(self.in_flight);
        let mut got = 0;
        while got < max && self.in_flight > 0 {
            let next = if got < min {
                self.done_rx.recv().ok()
            } else {
                self.done_rx.try_recv().ok()
            };
            let Some(c) = next else {
                if got < min {
                    return Err(TargetError::with_detail(
                        Errno::EIO,
                        "I/O queue workers are gone",
                    ));
                }
                break;
            };
            out.push(c);
            self.in_flight -= 1;
            got += 1;
        }
        Ok(got)
    }

    fn in_flight(&self) -> usize {
        self.in_flight
    }

    fn queues_syncs(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        "threads"
    }
}

impl Drop for ThreadedQueue {
    fn drop(&mut self) {
        // Closing the submission channel ends the workers once they finish what they hold.
        self.submit_tx.take();
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::OpenFlags;
    use crate::testing::{Call, RecordingTarget};

    #[test]
    fn buffers_are_page_aligned_and_zeroed() {
        let b = IoBuf::zeroed(12345);
        assert_eq!(b.as_ptr() as usize % IO_BUF_ALIGN, 0);
        assert_eq!(b.len(), 12345);
        assert!(b.iter().all(|&x| x == 0));
        assert_eq!(IoBuf::zeroed(0).len(), 0);
    }

    #[test]
    fn threaded_queue_runs_every_request_and_returns_buffers() {
        let rec = Arc::new(RecordingTarget::in_memory(1 << 30));
        let fd = rec
            .open(
                std::path::Path::new("/f"),
                OpenFlags::create_truncate(),
                0o644,
            )
            .unwrap();
        let mut q = ThreadedQueue::new(Arc::clone(&rec) as Arc<dyn Target>, 4).unwrap();
        for i in 0..8u64 {
            q.submit(IoRequest {
                token: i,
                fd,
                kind: IoKind::Write,
                offset: i * 4096,
                buf: IoBuf::zeroed(4096),
            })
            .unwrap();
        }
        q.submit(IoRequest {
            token: 99,
            fd,
            kind: IoKind::Fsync,
            offset: 0,
            buf: IoBuf::zeroed(0),
        })
        .unwrap();
        assert_eq!(q.in_flight(), 9);
        let mut out = Vec::new();
        let mut total = 0;
        while q.in_flight() > 0 {
            total += q.reap(1, 16, &mut out).unwrap();
        }
        assert_eq!(total, 9);
        let mut tokens: Vec<u64> = out.iter().map(|c| c.token).collect();
        tokens.sort_unstable();
        assert_eq!(tokens, vec![0, 1, 2, 3, 4, 5, 6, 7, 99]);
        assert!(out.iter().all(|c| c.result.is_ok()));
        let writes = rec
            .calls()
            .iter()
            .filter(|c| matches!(c, Call::Pwrite { len: 4096, .. }))
            .count();
        assert_eq!(writes, 8);
        drop(q);
    }
}
