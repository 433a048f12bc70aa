//! The lock-order checker is on in the build the tests run (`cargo test`, and
//! `cargo test --release --features lockcheck`, the documented command) and fires on a real
//! out-of-order acquisition through labfs's own locks, naming both.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use fslab::fs::Fs;
use fslab::fs::dev::{BlockDev, MemDev};
use fslab::fs::format::ag::{AGF_SECTOR, AGI_SECTOR};
use fslab::fs::format::{BBSIZE, BlockKind};
use fslab::fs::inode::InodeWrite;
use fslab::fs::lockcheck;
use fslab::fs::mkfs::mkfs;
use fslab::fs::options::Options;
use fslab::fs::trans::{Resv, Trans};

fn fresh() -> Arc<Fs> {
    let dev: Arc<dyn BlockDev> = Arc::new(MemDev::new(64 << 20).unwrap());
    let opts = Options::default();
    mkfs(Arc::clone(&dev), &opts).unwrap();
    Fs::mount(dev, opts.mount).unwrap()
}

fn panic_text(e: Box<dyn std::any::Any + Send>) -> String {
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn the_checker_is_compiled_into_the_test_build() {
    assert!(
        lockcheck::enabled(),
        "the lock-order checker is off: run the tests as `cargo test --release --features lockcheck`"
    );
}

#[test]
#[cfg_attr(
    not(any(debug_assertions, feature = "lockcheck")),
    ignore = "the lock-order checker is not compiled into this build"
)]
fn waiting_for_an_agi_while_holding_an_agf_panics_naming_both() {
    let fs = fresh();
    let geo = fs.geo;
    let mut tp = Trans::new(&fs, Resv::Create);
    tp.read_buf(geo.ag_header_daddr(1, AGF_SECTOR), BlockKind::Agf, BBSIZE)
        .unwrap();
    let err = catch_unwind(AssertUnwindSafe(|| {
        tp.read_buf(geo.ag_header_daddr(1, AGI_SECTOR), BlockKind::Agi, BBSIZE)
            .map(drop)
    }))
    .expect_err("an AGI after an AGF must panic");
    let msg = panic_text(err);
    assert!(
        msg.contains("lock order violation")
            && msg.contains("AGI of AG 1")
            && msg.contains("AGF of AG 1"),
        "{msg}"
    );
    drop(tp);
    // Nothing stays recorded once the transaction is gone.
    assert!(lockcheck::held().is_empty(), "{:?}", lockcheck::held());
}

#[test]
#[cfg_attr(
    not(any(debug_assertions, feature = "lockcheck")),
    ignore = "the lock-order checker is not compiled into this build"
)]
fn inode_locks_out_of_ascending_order_panic_naming_both() {
    let fs = fresh();
    let root = fs.root().unwrap();
    let (a, _) = fs.create(&root, b"a", 0o644, true).unwrap();
    let (b, _) = fs.create(&root, b"b", 0o644, true).unwrap();
    let (low, high) = if a.ino < b.ino { (a, b) } else { (b, a) };
    let held = InodeWrite::lock(Arc::clone(&high));
    let err = catch_unwind(AssertUnwindSafe(|| {
        drop(InodeWrite::lock(Arc::clone(&low)))
    }))
    .expect_err("a lower inode after a higher one must panic");
    let msg = panic_text(err);
    assert!(
        msg.contains(&format!("ILOCK of inode {}", low.ino))
            && msg.contains(&format!("ILOCK of inode {}", high.ino)),
        "{msg}"
    );
    drop(held);
    // In order, the same two locks are fine.
    let _l = InodeWrite::lock(Arc::clone(&low));
    let _h = InodeWrite::lock(high);
}

#[test]
#[cfg_attr(
    not(any(debug_assertions, feature = "lockcheck")),
    ignore = "the lock-order checker is not compiled into this build"
)]
fn unlinking_files_with_data_keeps_the_order() {
    // The path that deadlocked in issue 7: freeing a file's blocks (AGF) and then its inode
    // (AGI). With the checker on, any inversion here panics on the first unlink.
    let fs = fresh();
    let root = fs.root().unwrap();
    for i in 0..200 {
        let name = format!("f{i}");
        let (ip, _) = fs.create(&root, name.as_bytes(), 0o644, true).unwrap();
        fs.write(&ip, 0, &[7u8; 10000]).unwrap();
        if i % 3 == 0 {
            fs.fsync(&ip, false).unwrap();
        }
    }
    for i in 0..200 {
        fs.unlink(&root, format!("f{i}").as_bytes()).unwrap();
    }
    assert!(lockcheck::held().is_empty());
}

#[test]
#[cfg_attr(
    not(any(debug_assertions, feature = "lockcheck")),
    ignore = "the lock-order checker is not compiled into this build"
)]
fn waiting_for_log_space_while_holding_an_ilock_or_an_agf_panics_naming_both() {
    // Space comes back only when the AIL writes items home, and it only tries their locks:
    // a reservation made holding one could wait for ever (docs/locking.md).
    let fs = fresh();
    let root = fs.root().unwrap();
    let (f, _) = fs.create(&root, b"f", 0o644, true).unwrap();
    let held = InodeWrite::lock(Arc::clone(&f));
    let err = catch_unwind(AssertUnwindSafe(|| drop(Trans::new(&fs, Resv::Ichange))))
        .expect_err("a reservation under an ILOCK must panic");
    let msg = panic_text(err);
    assert!(
        msg.contains("lock order violation")
            && msg.contains("waiting for log space")
            && msg.contains(&format!("ILOCK of inode {}", f.ino)),
        "{msg}"
    );
    drop(held);
    assert!(lockcheck::held().is_empty(), "{:?}", lockcheck::held());

    let geo = fs.geo;
    let mut tp = Trans::new(&fs, Resv::Write);
    tp.read_buf(geo.ag_header_daddr(1, AGF_SECTOR), BlockKind::Agf, BBSIZE)
        .unwrap();
    let err = catch_unwind(AssertUnwindSafe(|| drop(Trans::new(&fs, Resv::Write))))
        .expect_err("a reservation under an AGF must panic");
    let msg = panic_text(err);
    assert!(
        msg.contains("waiting for log space") && msg.contains("AGF of AG 1"),
        "{msg}"
    );
    drop(tp);

    // The order: log space first, then the lock.
    let mut tp = Trans::new(&fs, Resv::Ichange);
    let id = tp.lock_inode(Arc::clone(&f));
    tp.ic_mut(id).di.mtime = 1;
    tp.log_inode(id);
    tp.commit().unwrap();
    assert!(lockcheck::held().is_empty());
}

#[test]
#[cfg_attr(
    not(any(debug_assertions, feature = "lockcheck")),
    ignore = "the lock-order checker is not compiled into this build"
)]
fn a_rolled_transaction_takes_its_reservation_again_holding_its_locks() {
    // A roll regrants its own reservation (XFS's permanent reservation), which is not a wait
    // for new space: no violation although the inode and an AGF are held.
    let fs = fresh();
    let root = fs.root().unwrap();
    let (f, _) = fs.create(&root, b"f", 0o644, true).unwrap();
    let geo = fs.geo;
    let mut tp = Trans::new(&fs, Resv::Write);
    let id = tp.lock_inode(Arc::clone(&f));
    let mut agf = tp
        .read_buf(geo.ag_header_daddr(0, AGF_SECTOR), BlockKind::Agf, BBSIZE)
        .unwrap();
    for step in 0..3 {
        tp.ic_mut(id).di.mtime = step;
        tp.log_inode(id);
        tp.roll(&mut [&mut agf]).unwrap();
    }
    tp.commit().unwrap();
    assert!(lockcheck::held().is_empty());
}
