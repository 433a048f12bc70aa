//! Linux native AIO on host files: `io_setup`, `io_submit`, `io_getevents`, `io_destroy`.
//!
//! This is what fio's `libaio` engine drives, called through the raw system calls (the
//! structures are the kernel ABI of `linux/aio_abi.h`). As with fio, only reads and writes
//! are queued; [`IoQueue::queues_syncs`] is false, so the caller drains the queue and syncs
//! synchronously. With buffered I/O the kernel completes most requests inside `io_submit`;
//! with O_DIRECT they really overlap. Either way the submission and completion latencies fio
//! reports (slat, clat) are measured around these calls.

use std::collections::HashMap;

use nix::errno::Errno;

use super::queue::{IoCompletion, IoKind, IoQueue, IoRequest};
use super::{Result, TargetError};

/// `struct iocb` (little-endian layout).
#[repr(C)]
#[derive(Debug, Default)]
struct Iocb {
    aio_data: u64,
    aio_key: u32,
    aio_rw_flags: i32,
    aio_lio_opcode: u16,
    aio_reqprio: i16,
    aio_fildes: u32,
    aio_buf: u64,
    aio_nbytes: u64,
    aio_offset: i64,
    aio_reserved2: u64,
    aio_flags: u32,
    aio_resfd: u32,
}

/// `struct io_event`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
struct IoEvent {
    data: u64,
    obj: u64,
    res: i64,
    res2: i64,
}

const IOCB_CMD_PREAD: u16 = 0;
const IOCB_CMD_PWRITE: u16 = 1;

/// A Linux AIO context with the requests it holds.
pub struct AioQueue {
    ctx: libc::c_ulong,
    depth: usize,
    /// Requests in flight by token; the boxed iocb must not move until completion.
    inflight: HashMap<u64, (Box<Iocb>, IoRequest)>,
    events: Vec<IoEvent>,
}

impl AioQueue {
    /// An AIO context for `depth` requests.
    pub fn new(depth: u32) -> Result<AioQueue> {
        let depth = depth.max(1) as usize;
        let mut ctx: libc::c_ulong = 0;
        // SAFETY: io_setup writes the new context into ctx.
        let ret = unsafe { libc::syscall(libc::SYS_io_setup, depth as libc::c_long, &mut ctx) };
        if ret < 0 {
            return Err(TargetError::with_detail(Errno::last(), "io_setup"));
        }
        Ok(AioQueue {
            ctx,
            depth,
            inflight: HashMap::with_capacity(depth),
            events: vec![IoEvent::default(); depth],
        })
    }
}

impl IoQueue for AioQueue {
    fn submit(&mut self, req: IoRequest) -> Result<()> {
        let opcode = match req.kind {
            IoKind::Read => IOCB_CMD_PREAD,
            IoKind::Write => IOCB_CMD_PWRITE,
            IoKind::Fsync | IoKind::Fdatasync => {
                return Err(TargetError::with_detail(
                    Errno::EINVAL,
                    "libaio does not queue syncs; drain the queue and sync",
                ));
            }
        };
        if self.inflight.len() >= self.depth || self.inflight.contains_key(&req.token) {
            return Err(TargetError::with_detail(Errno::EAGAIN, "AIO queue is full"));
        }
        let mut iocb = Box::new(Iocb {
            aio_data: req.token,
            aio_lio_opcode: opcode,
            aio_fildes: req.fd.0 as u32,
            aio_buf: req.buf.as_ptr() as u64,
            aio_nbytes: req.buf.len() as u64,
            aio_offset: req.offset as i64,
            ..Iocb::default()
        });
        let mut ptr: *mut Iocb = &mut *iocb;
        // SAFETY: one valid iocb whose buffer lives in `req`, kept in `inflight` (with the
        // boxed iocb) until io_getevents returns it.
        let ret =
            unsafe { libc::syscall(libc::SYS_io_submit, self.ctx, 1 as libc::c_long, &mut ptr) };
        if ret < 0 {
            return Err(TargetError::with_detail(Errno::last(), "io_submit"));
        }
        if ret == 0 {
            return Err(TargetError::with_detail(
                Errno::EAGAIN,
                "io_submit took nothing",
            ));
        }
        self.inflight.insert(req.token, (iocb, req));
        Ok(())
    }

    fn reap(&mut self, min: usize, max: usize, out: &mut Vec<IoCompletion>) -> Result<usize> {
        let max = max.min(self.inflight.len()).min(self.events.len());
        let min = min.min(max);
        if max == 0 {
            return Ok(0);
        }
        let got = loop {
            // SAFETY: events has room for `max` entries; no timeout (null) means wait for min.
            let ret = unsafe {
                libc::syscall(
                    libc::SYS_io_getevents,
                    self.ctx,
                    min as libc::c_long,
                    max as libc::c_long,
                    self.events.as_mut_ptr(),
                    std::ptr::null_mut::<libc::timespec>(),
                )
            };
            if ret < 0 {
                let e = Errno::last();
                if e == Errno::EINTR {
                    continue;
                }
                return Err(TargetError::with_detail(e, "io_getevents"));
            }
            break ret as usize;
        };
        for ev in &self.events[..got] {
            let Some((_iocb, req)) = self.inflight.remove(&ev.data) else {
                return Err(TargetError::with_detail(
                    Errno::EIO,
                    "io_getevents returned an unknown request",
                ));
            };
            let result = if ev.res < 0 {
                Err(TargetError::errno(Errno::from_raw((-ev.res) as i32)))
            } else {
                Ok(ev.res as usize)
            };
            out.push(IoCompletion {
                token: req.token,
                result,
                buf: req.buf,
            });
        }
        Ok(got)
    }

    fn in_flight(&self) -> usize {
        self.inflight.len()
    }

    fn queues_syncs(&self) -> bool {
        false
    }

    fn name(&self) -> &'static str {
        "libaio"
    }
}

impl Drop for AioQueue {
    fn drop(&mut self) {
        // Wait for what is still in flight before the buffers go away, then destroy.
        let mut out = Vec::new();
        while !self.inflight.is_empty() {
            let n = self.inflight.len();
            if self.reap(n, n, &mut out).is_err() {
                break;
            }
        }
        // SAFETY: ctx came from io_setup and is destroyed once.
        unsafe { libc::syscall(libc::SYS_io_destroy, self.ctx) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::host::HostTarget;
    use crate::backend::queue::IoBuf;
    use crate::backend::{OpenFlags, Target};

    #[test]
    fn writes_and_reads_through_the_kernel() {
        let dir = tempfile::tempdir().unwrap();
        let t = HostTarget::new();
        let fd = t
            .open(&dir.path().join("f"), OpenFlags::create_truncate(), 0o644)
            .unwrap();
        let mut q = AioQueue::new(4).unwrap();
        for i in 0..4u64 {
            let mut buf = IoBuf::zeroed(4096);
            buf.fill(i as u8 + 1);
            q.submit(IoRequest {
                token: i,
                fd,
                kind: IoKind::Write,
                offset: i * 4096,
                buf,
            })
            .unwrap();
        }
        let over = q.submit(IoRequest {
            token: 9,
            fd,
            kind: IoKind::Write,
            offset: 0,
            buf: IoBuf::zeroed(1),
        });
        assert_eq!(over.unwrap_err().errno, Errno::EAGAIN, "depth is enforced");
        let mut out = Vec::new();
        while q.in_flight() > 0 {
            q.reap(1, 4, &mut out).unwrap();
        }
        assert_eq!(out.len(), 4);
        assert!(out.iter().all(|c| matches!(c.result, Ok(4096))));
        q.submit(IoRequest {
            token: 10,
            fd,
            kind: IoKind::Read,
            offset: 8192,
            buf: IoBuf::zeroed(4096),
        })
        .unwrap();
        out.clear();
        q.reap(1, 1, &mut out).unwrap();
        assert!(out[0].buf.iter().all(|&b| b == 3));
        let sync = q.submit(IoRequest {
            token: 11,
            fd,
            kind: IoKind::Fsync,
            offset: 0,
            buf: IoBuf::zeroed(0),
        });
        assert!(sync.is_err(), "syncs are the caller's job with libaio");
        t.close(fd).unwrap();
    }
}
