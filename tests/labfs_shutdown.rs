//! Shutdown on a failed write-home: when a metadata buffer cannot be written home, or the
//! device cache cannot be flushed, labfs shuts down as XFS does (`xfs_force_shutdown`). The
//! sync that hit the failure returns the typed I/O error, every later operation fails with
//! `Shutdown`, unmount says the filesystem had shut down, and the device holds exactly what
//! had been written before the failure: nothing more is written, nothing is flushed.

mod common;

use std::sync::Arc;

use fslab::fs::Fs;
use fslab::fs::dev::fault::{AfterFail, CrashPlan, Event, FailRule, Keep, Position, WriteInfo};
use fslab::fs::dev::{BlockDev, DevError, FaultDev, IoKind};
use fslab::fs::error::{FsError, IoOp, ShutdownReason};
use fslab::fs::inode::Inode;

use common::image::{self, Image, assert_clean};

const DEV_BYTES: u64 = 32 << 20;

/// Every byte of the device.
fn snapshot(dev: &dyn BlockDev) -> Vec<u8> {
    let mut b = vec![0u8; dev.size() as usize];
    dev.read_at(&mut b, 0).expect("snapshot read");
    b
}

/// The writes the shim recorded after `since`.
fn writes_since(dev: &FaultDev, since: Position) -> Vec<WriteInfo> {
    dev.events()
        .into_iter()
        .filter_map(|e| match e {
            Event::Write(w) if w.index >= since.writes => Some(w),
            _ => None,
        })
        .collect()
}

/// A mounted image with one durable file, `keep`, and then a new directory of files whose
/// metadata is committed but in memory only (in the CIL; no file data).
fn durable_file_then_dirty_metadata() -> (Image, Arc<Fs>, Arc<Inode>) {
    let (img, fs) = image::fault(DEV_BYTES).mount();
    let root = fs.root().unwrap();
    let (ip, _) = fs.create(&root, b"keep", 0o644, true).unwrap();
    fs.write(&ip, 0, &[0x5a; 8192]).unwrap();
    fs.sync().unwrap();
    let d = fs.mkdir(&root, b"d", 0o755).unwrap();
    for i in 0..40 {
        fs.create(&d, format!("f{i}").as_bytes(), 0o644, true)
            .unwrap();
    }
    assert!(
        fs.log.cil_len() >= 3,
        "the test needs several dirty objects, has {}",
        fs.log.cil_len()
    );
    (img, fs, ip)
}

/// Every kind of operation after the shutdown fails with `Shutdown`, and none writes or
/// flushes the device.
fn assert_everything_refused(fs: &Fs, dev: &FaultDev, keep: &Arc<Inode>) {
    let at = dev.position();
    let root = fs.root().unwrap();
    assert_eq!(
        fs.create(&root, b"late", 0o644, true).err(),
        Some(FsError::Shutdown)
    );
    assert_eq!(
        fs.mkdir(&root, b"late-dir", 0o755).err(),
        Some(FsError::Shutdown)
    );
    assert_eq!(fs.write(keep, 0, b"late").err(), Some(FsError::Shutdown));
    assert_eq!(fs.fsync(keep, false).err(), Some(FsError::Shutdown));
    assert_eq!(fs.sync().err(), Some(FsError::Shutdown));
    assert_eq!(fs.bufs.flush_all().err(), Some(FsError::Shutdown));
    assert_eq!(
        dev.position(),
        at,
        "nothing was written or flushed after the shutdown"
    );
}

#[test]
fn a_failed_write_home_shuts_down_and_leaves_the_image_as_written() {
    let (img, fs, keep) = durable_file_then_dirty_metadata();
    let dev = img.fault();
    // The directory goes to the log (the FUA record, then a flush so the durable image
    // below holds it); its metadata is now in the AIL, not yet home.
    fs.sync().unwrap();
    dev.flush().unwrap();
    let before = snapshot(dev.inner().as_ref());
    let at = dev.position();
    let dirty = fs.log.ail_len();
    assert!(dirty >= 3, "{dirty} items in the AIL");

    // The second write-home of the AIL push fails; the device itself recovers at once, so
    // anything labfs wrote after the failure would land and show.
    dev.fail(FailRule {
        kind: IoKind::Write,
        nth: 2,
        then: AfterFail::Recover,
    });
    let err = fs
        .quiesce()
        .expect_err("an AIL push with a failing write-home");
    let FsError::Io {
        what: IoOp::WriteHome(_),
        daddr: Some(daddr),
        source: DevError::Injected { req, .. },
    } = &err
    else {
        panic!("not a typed write-home error: {err:?}");
    };
    assert_eq!(req.kind, IoKind::Write);
    assert_eq!(
        req.offset,
        daddr * 512,
        "the error names the failed request's address"
    );
    assert!(
        std::error::Error::source(&err).is_some_and(|s| s.is::<DevError>()),
        "the device error is the source of the chain"
    );

    // Shut down, with the write-home error as the reason.
    assert_eq!(fs.check_live(), Err(FsError::Shutdown));
    assert_eq!(
        fs.shutdown_reason(),
        Some(ShutdownReason::MetadataIo(Box::new(err.clone())))
    );

    // Exactly one write went home (the one before the failure): one buffer, or one inode
    // cluster carrying up to 32 inode items (XFS's cluster flush); the rest stay in the
    // AIL, and the device was not flushed: nothing pretends to be durable.
    let written = writes_since(dev, at);
    assert_eq!(written.len(), 1, "writes after the failure: {written:?}");
    let per_write = fslab::fs::geo::INODES_PER_CLUSTER as usize;
    assert!(
        fs.log.ail_len() >= dirty.saturating_sub(per_write),
        "{} AIL items left of {dirty} before the push",
        fs.log.ail_len()
    );
    assert_eq!(dev.flush_count(), at.flushes);
    let after = snapshot(dev.inner().as_ref());
    let w = written[0];
    let (lo, hi) = (w.offset as usize, (w.offset + w.len) as usize);
    assert!(
        before[..lo] == after[..lo],
        "bytes before the one write changed"
    );
    assert!(
        before[hi..] == after[hi..],
        "bytes after the one write changed"
    );

    assert_everything_refused(&fs, dev, &keep);

    // Unmount says why, typed, every time, and writes nothing.
    let expect = FsError::ShutDownBeforeUnmount {
        reason: ShutdownReason::MetadataIo(Box::new(err.clone())),
    };
    assert_eq!(fs.unmount(), Err(expect.clone()));
    assert_eq!(fs.unmount(), Err(expect));
    assert!(
        snapshot(dev.inner().as_ref()) == after,
        "unmount wrote to the device"
    );

    // What was durable before the failing push is a clean filesystem: the log replays the
    // directory the sync made durable.
    let crash = dev
        .crash_image(&CrashPlan::at(at.flushes).keep(Keep::None))
        .expect("crash image at the last flush");
    let fs2 = Fs::mount(crash.dev, img.options.mount.clone()).expect("mount the durable image");
    let root = fs2.root().unwrap();
    assert!(fs2.lookup(&root, b"keep").is_ok());
    let d = fs2.lookup(&root, b"d").expect("the synced directory");
    assert_eq!(fs2.readdir(&d).unwrap().len(), 40);
    assert_clean(&fs2, "durable image after the failed push");
}

#[test]
fn a_failed_device_flush_shuts_down() {
    let (img, fs, keep) = durable_file_then_dirty_metadata();
    let dev = img.fault();
    dev.fail(FailRule {
        kind: IoKind::Flush,
        nth: 1,
        then: AfterFail::Recover,
    });
    let at = dev.position();
    let err = fs.sync().expect_err("sync with a failing flush");
    assert!(
        matches!(
            err,
            FsError::Io {
                what: IoOp::FlushDevice,
                daddr: None,
                source: DevError::Injected { .. },
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        dev.flush_count(),
        at.flushes,
        "the failed flush made nothing durable"
    );
    assert_eq!(
        fs.shutdown_reason(),
        Some(ShutdownReason::MetadataIo(Box::new(err.clone())))
    );
    assert_everything_refused(&fs, dev, &keep);
    assert!(matches!(
        fs.unmount(),
        Err(FsError::ShutDownBeforeUnmount {
            reason: ShutdownReason::MetadataIo(_)
        })
    ));
}

#[test]
fn the_errors_print_their_operation_address_and_device_error() {
    let (img, fs, _) = durable_file_then_dirty_metadata();
    fs.sync().unwrap();
    img.fault().fail(FailRule {
        kind: IoKind::Write,
        nth: 1,
        then: AfterFail::Recover,
    });
    let err = fs
        .quiesce()
        .expect_err("an AIL push with a failing write-home");
    let text = err.to_string();
    assert!(
        text.starts_with("device I/O error: writing ") && text.contains(" home at daddr "),
        "{text}"
    );
    assert!(text.contains("injected one-shot error"), "{text}");
    let unmount = fs
        .unmount()
        .expect_err("unmount after shutdown")
        .to_string();
    assert!(
        unmount.starts_with("the filesystem shut down earlier (device I/O error: writing "),
        "{unmount}"
    );
}
