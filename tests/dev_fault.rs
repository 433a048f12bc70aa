//! The fault shim: crash images at every flush point, torn writes, bit flips, injected errors,
//! bounded recording.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use fslab::fs::dev::fault::{
    AfterFail, ApplyOrder, BitFlip, CrashPlan, Event, FailRule, FlushPoint, Keep, Position,
    SectorPick, Tear, TearTarget,
};
use fslab::fs::dev::{BlockDev, DevError, FaultDev, IoKind, MemDev};

const MIB: u64 = 1 << 20;
const BLOCK: usize = 4096;

fn read(d: &dyn BlockDev, offset: u64, len: usize) -> Vec<u8> {
    let mut b = vec![0u8; len];
    d.read_at(&mut b, offset).expect("read in range");
    b
}

/// A scripted operation against a 16-block region.
#[derive(Debug, Clone, Copy)]
enum Op {
    Write { block: u64, fill: u8, fua: bool },
    Flush,
}

/// Twelve writes (every fourth FUA) to overlapping blocks, a flush after every third write,
/// and two writes after the last flush.
fn script() -> Vec<Op> {
    let mut ops = Vec::new();
    for i in 0..14u8 {
        ops.push(Op::Write {
            block: (u64::from(i) * 5) % 16,
            fill: i + 1,
            fua: i % 4 == 3,
        });
        if i % 3 == 2 && i < 12 {
            ops.push(Op::Flush);
        }
    }
    ops
}

/// The 16-block region after the writes before flush `k` plus the first `n` writes after it.
fn model(ops: &[Op], k: usize, n: usize) -> Vec<u8> {
    let mut img = vec![0u8; 16 * BLOCK];
    let mut flushes = 0;
    let mut after = 0;
    for op in ops {
        match *op {
            Op::Flush => {
                flushes += 1;
                if flushes > k {
                    break;
                }
            }
            Op::Write { block, fill, .. } => {
                if flushes == k {
                    if after == n {
                        break;
                    }
                    after += 1;
                }
                let at = block as usize * BLOCK;
                img[at..at + BLOCK].fill(fill);
            }
        }
    }
    img
}

fn run(dev: &FaultDev, ops: &[Op]) {
    for op in ops {
        match *op {
            Op::Write { block, fill, fua } => dev
                .write_at(&[fill; BLOCK], block * BLOCK as u64, fua)
                .expect("write"),
            Op::Flush => dev.flush().expect("flush"),
        }
    }
}

#[test]
fn crash_image_at_every_flush_point_and_every_prefix_matches_the_model() {
    let ops = script();
    let dev = FaultDev::new_mem(MIB).expect("valid size");
    run(&dev, &ops);
    assert_eq!(dev.flush_count(), 4);
    let mut images = 0;
    for k in 0..=dev.flush_count() {
        let pending = dev.pending_writes(k).expect("point held");
        assert_eq!(pending.len(), if k == 4 { 2 } else { 3 }, "point {k}");
        for n in 0..=pending.len() {
            let img = dev
                .crash_image(&CrashPlan::at(k).keep(Keep::Prefix(n)))
                .expect("image");
            assert_eq!(img.kept, (0..n).collect::<Vec<_>>());
            assert_eq!(
                read(&*img.dev, 0, 16 * BLOCK),
                model(&ops, k as usize, n),
                "flush point {k}, prefix {n}"
            );
            images += 1;
        }
    }
    assert_eq!(images, 4 * 4 + 3);
}

#[test]
fn keep_all_at_the_last_point_equals_the_live_device_and_keep_none_drops_unflushed() {
    let ops = script();
    let dev = FaultDev::new_mem(MIB).expect("valid size");
    run(&dev, &ops);
    let last = dev.flush_count();
    let all = dev
        .crash_image(&CrashPlan::at(last).keep(Keep::All))
        .expect("image");
    assert_eq!(read(&*all.dev, 0, 16 * BLOCK), read(&dev, 0, 16 * BLOCK));
    let none = dev.crash_image(&CrashPlan::at(last)).expect("image");
    assert_eq!(read(&*none.dev, 0, 16 * BLOCK), model(&ops, 4, 0));
    assert_ne!(read(&*none.dev, 0, 16 * BLOCK), read(&dev, 0, 16 * BLOCK));
}

#[test]
fn dropping_a_pending_fua_write_models_a_crash_before_it_completed() {
    let dev = FaultDev::new_mem(MIB).expect("valid size");
    dev.write_at(&[1u8; 512], 0, false).expect("write");
    dev.flush().expect("flush");
    dev.write_at(&[2u8; 512], 512, true).expect("fua write");
    let pending = dev.pending_writes(1).expect("point held");
    assert_eq!(pending.len(), 1);
    assert!(pending[0].fua);
    let before = dev.crash_image(&CrashPlan::at(1)).expect("image");
    assert_eq!(read(&*before.dev, 512, 512), vec![0u8; 512]);
    let after = dev
        .crash_image(&CrashPlan::at(1).keep(Keep::All))
        .expect("image");
    assert_eq!(read(&*after.dev, 512, 512), vec![2u8; 512]);
}

#[test]
fn random_subset_lands_exactly_the_writes_it_reports() {
    let dev = FaultDev::new_mem(MIB).expect("valid size");
    dev.flush().expect("flush");
    for i in 0..32u8 {
        dev.write_at(&[i + 1; 512], u64::from(i) * 512, false)
            .expect("write");
    }
    let mut subsets = Vec::new();
    for seed in [1u64, 2, 3] {
        let img = dev
            .crash_image(&CrashPlan::at(1).keep(Keep::Random { seed }))
            .expect("image");
        let got = read(&*img.dev, 0, 32 * 512);
        for (i, sector) in got.chunks(512).enumerate() {
            let want = if img.kept.contains(&i) {
                i as u8 + 1
            } else {
                0
            };
            assert!(sector.iter().all(|&x| x == want), "seed {seed} sector {i}");
        }
        subsets.push(img.kept);
    }
    assert!(subsets[0] != subsets[1] || subsets[1] != subsets[2]);
    let again = dev
        .crash_image(&CrashPlan::at(1).keep(Keep::Random { seed: 1 }))
        .expect("image");
    assert_eq!(again.kept, subsets[0]);
    let explicit = dev
        .crash_image(&CrashPlan::at(1).keep(Keep::Subset(vec![31, 4])))
        .expect("image");
    assert_eq!(explicit.kept, vec![4, 31]);
    assert_eq!(read(&*explicit.dev, 4 * 512, 512), vec![5u8; 512]);
    assert_eq!(read(&*explicit.dev, 5 * 512, 512), vec![0u8; 512]);
}

#[test]
fn torn_write_lands_only_the_chosen_sectors() {
    let dev = FaultDev::new_mem(MIB).expect("valid size");
    dev.write_at(&[1u8; 8192], 0, false).expect("old contents");
    dev.flush().expect("flush");
    dev.write_at(&[2u8; 8192], 0, false)
        .expect("the write that tears");

    let prefix = dev
        .crash_image(&CrashPlan::at(1).keep(Keep::All).tear(Tear {
            target: TearTarget::LastKept,
            sectors: SectorPick::Prefix(3),
        }))
        .expect("image");
    let got = read(&*prefix.dev, 0, 8192);
    assert!(got[..3 * 512].iter().all(|&x| x == 2));
    assert!(got[3 * 512..].iter().all(|&x| x == 1));
    let torn = prefix.torn.expect("torn");
    assert_eq!((torn.position, torn.sectors), (0, 16));

    for seed in 0..8 {
        let img = dev
            .crash_image(&CrashPlan::at(1).keep(Keep::All).tear(Tear {
                target: TearTarget::Index(0),
                sectors: SectorPick::Random { seed },
            }))
            .expect("image");
        let torn = img.torn.expect("torn");
        assert!(!torn.landed.is_empty() && torn.landed.len() < 16);
        let got = read(&*img.dev, 0, 8192);
        for (s, sector) in got.chunks(512).enumerate() {
            let want = if torn.landed.contains(&(s as u32)) {
                2
            } else {
                1
            };
            assert!(sector.iter().all(|&x| x == want), "seed {seed} sector {s}");
        }
    }

    let refused = dev.crash_image(&CrashPlan::at(1).tear(Tear {
        target: TearTarget::LastKept,
        sectors: SectorPick::Prefix(1),
    }));
    assert!(matches!(refused, Err(DevError::CrashPlan(_))));
}

#[test]
fn bit_flip_on_read_changes_what_reads_return_but_not_the_data() {
    let dev = FaultDev::new_mem(MIB).expect("valid size");
    dev.write_at(&[0u8; 4096], 8192, false).expect("write");
    dev.flip_on_read(BitFlip::in_sector(17, 3, 0x10));
    let got = read(&dev, 8192, 4096);
    assert_eq!(got[512 + 3], 0x10);
    assert_eq!(got.iter().filter(|&&b| b != 0).count(), 1);
    // A read not covering the byte is untouched; the inner device holds the real data.
    assert!(read(&dev, 0, 4096).iter().all(|&b| b == 0));
    assert!(read(&**dev.inner(), 8192, 4096).iter().all(|&b| b == 0));
    dev.clear_read_flips();
    assert!(read(&dev, 8192, 4096).iter().all(|&b| b == 0));
}

#[test]
fn corruption_is_durable_and_only_in_images_after_it() {
    let dev = FaultDev::new_mem(MIB).expect("valid size");
    dev.write_at(&[0xAAu8; 512], 0, false).expect("write");
    dev.flush().expect("flush");
    dev.corrupt(BitFlip::at_byte(100, 0x01)).expect("in range");
    dev.flush().expect("flush");
    assert_eq!(read(&dev, 0, 512)[100], 0xAB);
    let before = dev
        .crash_image(&CrashPlan::at(0).keep(Keep::All))
        .expect("image");
    assert_eq!(read(&*before.dev, 0, 512), vec![0xAAu8; 512]);
    // At point 1 the corruption is pending, but media corruption lands whatever the plan.
    let at1 = dev.crash_image(&CrashPlan::at(1)).expect("image");
    assert!(at1.pending.is_empty());
    assert_eq!(read(&*at1.dev, 0, 512)[100], 0xAB);
    let at2 = dev.crash_image(&CrashPlan::at(2)).expect("image");
    assert_eq!(read(&*at2.dev, 0, 512)[100], 0xAB);
}

#[test]
fn injected_write_error_is_returned_once_then_io_works_again() {
    let dev = FaultDev::new_mem(MIB).expect("valid size");
    dev.fail(FailRule {
        kind: IoKind::Write,
        nth: 2,
        then: AfterFail::Recover,
    });
    dev.write_at(&[1u8; 512], 0, false).expect("first write");
    let e = dev
        .write_at(&[2u8; 512], 512, false)
        .expect_err("second write fails");
    assert!(
        matches!(
            e,
            DevError::Injected {
                nth: 2,
                sticky: false,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "injected one-shot error on write of 512 bytes at byte 512 (fault(mem:1MiB), 2nd write since the rule was armed)"
    );
    // The failed write never reached the device and was not recorded.
    assert_eq!(read(&dev, 512, 512), vec![0u8; 512]);
    assert_eq!(dev.write_count(), 1);
    dev.write_at(&[3u8; 512], 512, false).expect("third write");
    dev.read_at(&mut [0u8; 512], 0).expect("reads unaffected");
    assert_eq!(dev.io_counts().writes, 3);
}

#[test]
fn fail_all_fails_every_later_request_until_cleared() {
    let dev = FaultDev::new_mem(MIB).expect("valid size");
    dev.fail(FailRule {
        kind: IoKind::Read,
        nth: 1,
        then: AfterFail::FailAll,
    });
    let mut b = [0u8; 512];
    assert!(matches!(
        dev.read_at(&mut b, 0),
        Err(DevError::Injected { sticky: true, .. })
    ));
    assert!(matches!(
        dev.write_at(&b, 0, false),
        Err(DevError::InjectedDead { .. })
    ));
    assert!(matches!(dev.flush(), Err(DevError::InjectedDead { .. })));
    assert!(matches!(
        dev.read_at(&mut b, 0),
        Err(DevError::InjectedDead { .. })
    ));
    dev.clear_faults();
    dev.write_at(&b, 0, false).expect("write after clear");
    dev.flush().expect("flush after clear");
    dev.read_at(&mut b, 0).expect("read after clear");
}

#[test]
fn failed_flush_creates_no_flush_point() {
    let dev = FaultDev::new_mem(MIB).expect("valid size");
    dev.write_at(&[1u8; 512], 0, false).expect("write");
    dev.fail(FailRule {
        kind: IoKind::Flush,
        nth: 1,
        then: AfterFail::Recover,
    });
    assert!(matches!(dev.flush(), Err(DevError::Injected { .. })));
    assert_eq!(dev.flush_count(), 0);
    let img = dev.crash_image(&CrashPlan::at(0)).expect("image");
    assert_eq!(read(&*img.dev, 0, 512), vec![0u8; 512]);
    dev.flush().expect("flush");
    assert_eq!(dev.flush_count(), 1);
}

#[test]
fn log_limit_folds_old_flush_points_and_keeps_recent_images_right() {
    let dev = FaultDev::new_mem(MIB).expect("valid size");
    dev.set_log_limit(16 * 1024);
    for i in 0..20u8 {
        dev.write_at(&[i + 1; BLOCK], u64::from(i % 8) * BLOCK as u64, false)
            .expect("write");
        dev.flush().expect("flush");
    }
    assert!(dev.log_bytes() <= 16 * 1024, "{}", dev.log_bytes());
    let oldest = dev.oldest_flush_point();
    assert!(oldest > 0 && oldest < 20, "{oldest}");
    assert!(matches!(
        dev.crash_image(&CrashPlan::at(0)),
        Err(DevError::CrashPlan(_))
    ));
    let last = dev.crash_image(&CrashPlan::at(20)).expect("image");
    assert_eq!(read(&*last.dev, 0, 8 * BLOCK), read(&dev, 0, 8 * BLOCK));
    let old = dev.crash_image(&CrashPlan::at(oldest)).expect("image");
    // After flush `oldest`, blocks hold the fills of writes oldest-8 .. oldest.
    for b in 0..8u64 {
        let last_write = (0..oldest).rev().find(|w| w % 8 == b);
        let want = last_write.map_or(0, |w| w as u8 + 1);
        assert_eq!(
            read(&*old.dev, b * BLOCK as u64, 512),
            vec![want; 512],
            "block {b}"
        );
    }
    dev.forget_before(20).expect("fold");
    assert_eq!(dev.oldest_flush_point(), 20);
    assert_eq!(dev.log_bytes(), 0);
}

#[test]
fn base_image_is_the_wrapped_devices_contents() {
    let mem = Arc::new(MemDev::new(MIB).expect("valid size"));
    mem.write_at(&[7u8; 4096], 65536, false).expect("write");
    let over = FaultDev::over_mem(Arc::clone(&mem));
    let generic = FaultDev::new(mem).expect("snapshot by reading");
    for dev in [&over, &generic] {
        dev.write_at(&[8u8; 512], 0, false).expect("write");
        let img = dev.crash_image(&CrashPlan::at(0)).expect("image");
        assert_eq!(read(&*img.dev, 65536, 4096), vec![7u8; 4096]);
        assert_eq!(read(&*img.dev, 0, 512), vec![0u8; 512]);
    }
}

#[test]
fn crash_image_is_a_usable_device_whose_contents_are_all_durable() {
    let dev = FaultDev::new_mem(MIB).expect("valid size");
    dev.write_at(&[4u8; 4096], 0, false).expect("write");
    let img = dev
        .crash_image(&CrashPlan::at(0).keep(Keep::All))
        .expect("image");
    img.dev
        .write_at(&[5u8; 512], 4096, false)
        .expect("write to image");
    img.dev.crash();
    assert_eq!(read(&*img.dev, 0, 4096), vec![4u8; 4096]);
    assert_eq!(read(&*img.dev, 4096, 512), vec![0u8; 512]);
}

#[test]
fn events_are_recorded_in_completion_order() {
    let dev = FaultDev::new_mem(MIB).expect("valid size");
    dev.write_at(&[1u8; 512], 0, false).expect("write");
    dev.write_at(&[1u8; 1024], 512, true).expect("write");
    dev.flush().expect("flush");
    dev.write_at(&[1u8; 512], 0, false).expect("write");
    let kinds: Vec<(u64, String)> = dev
        .events()
        .into_iter()
        .map(|e| match e {
            Event::Write(w) => (
                w.seq,
                format!("w{}+{}{}", w.offset, w.len, if w.fua { "F" } else { "" }),
            ),
            Event::Flush { seq, point } => (seq, format!("f{point}")),
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            (1, "w0+512".to_string()),
            (2, "w512+1024F".to_string()),
            (3, "f1".to_string()),
            (4, "w0+512".to_string()),
        ]
    );
}

/// A device whose flush blocks until the test lets it finish, to order a write inside it.
struct GatedFlush {
    mem: MemDev,
    entered: Mutex<mpsc::Sender<()>>,
    release: Mutex<mpsc::Receiver<()>>,
}

impl BlockDev for GatedFlush {
    fn size(&self) -> u64 {
        self.mem.size()
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<(), DevError> {
        self.mem.read_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64, fua: bool) -> Result<(), DevError> {
        self.mem.write_at(buf, offset, fua)
    }
    fn flush(&self) -> Result<(), DevError> {
        let _ = self.entered.lock().expect("sender").send(());
        let _ = self.release.lock().expect("receiver").recv();
        self.mem.flush()
    }
    fn describe(&self) -> String {
        "gated".into()
    }
}

#[test]
fn write_completing_during_a_flush_is_not_covered_by_it() {
    let (entered_tx, entered_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel();
    let inner = Arc::new(GatedFlush {
        mem: MemDev::new(MIB).expect("valid size"),
        entered: Mutex::new(entered_tx),
        release: Mutex::new(release_rx),
    });
    let dev = Arc::new(FaultDev::new(inner).expect("wraps"));
    dev.write_at(&[1u8; 512], 0, false)
        .expect("before the flush");
    let flusher = {
        let dev = Arc::clone(&dev);
        std::thread::spawn(move || dev.flush())
    };
    entered_rx.recv().expect("flush started");
    dev.write_at(&[2u8; 512], 512, false)
        .expect("during the flush");
    release_tx.send(()).expect("release");
    flusher.join().expect("flusher").expect("flush ok");

    let at1 = dev.crash_image(&CrashPlan::at(1)).expect("image");
    assert_eq!(read(&*at1.dev, 0, 512), vec![1u8; 512]);
    assert_eq!(read(&*at1.dev, 512, 512), vec![0u8; 512]);
    assert_eq!(at1.pending.len(), 1);
    assert_eq!(at1.pending[0].offset, 512);
}

#[test]
fn concurrent_writes_are_all_recorded() {
    let dev = Arc::new(FaultDev::new_mem(MIB).expect("valid size"));
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let dev = Arc::clone(&dev);
            std::thread::spawn(move || {
                for i in 0..50u64 {
                    dev.write_at(&[t as u8 + 1; 512], (t * 50 + i) * 512, false)
                        .expect("write");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("writer");
    }
    assert_eq!(dev.write_count(), 200);
    let img = dev
        .crash_image(&CrashPlan::at(0).keep(Keep::All))
        .expect("image");
    assert_eq!(read(&*img.dev, 0, 200 * 512), read(&*dev, 0, 200 * 512));
}

#[test]
fn flushes_without_writes_do_not_grow_the_log_past_its_limit() {
    let dev = FaultDev::new_mem(MIB).expect("valid size");
    dev.set_log_limit(4096);
    for _ in 0..10_000 {
        dev.flush().expect("flush");
    }
    assert!(dev.log_bytes() <= 4096, "{}", dev.log_bytes());
    assert!(dev.oldest_flush_point() > 9_000);
    assert_eq!(dev.flush_count(), 10_000);
    dev.crash_image(&CrashPlan::at(10_000))
        .expect("latest point held");
}

#[test]
fn position_and_flush_points_place_writes_among_flushes() {
    let dev = FaultDev::new_mem(MIB).expect("valid size");
    assert_eq!(dev.position(), Position::default());
    dev.write_at(&[1u8; 512], 0, false).expect("write");
    dev.write_at(&[2u8; 512], 512, true).expect("write");
    dev.flush().expect("flush");
    dev.write_at(&[3u8; 512], 1024, false).expect("write");
    let now = dev.position();
    assert_eq!(
        now,
        Position {
            flushes: 1,
            writes: 3
        }
    );
    assert_eq!(
        dev.flush_point(1).expect("held"),
        FlushPoint {
            point: 1,
            durable_writes: 2,
            completed_writes: 2
        }
    );
    assert_eq!(dev.flush_point(0).expect("held").completed_writes, 0);
    assert!(dev.flush_point(2).is_err());
    let pending = dev.pending_writes(1).expect("held");
    assert_eq!(pending.len(), 1);
    assert_eq!(
        pending[0].issued,
        Position {
            flushes: 1,
            writes: 2
        },
        "issued after the flush and the first two writes"
    );
    assert!(pending[0].issued.reached_by(now));
    assert!(!now.reached_by(pending[0].issued));
}

#[test]
fn a_folded_flush_point_still_reports_where_it_completed() {
    let dev = FaultDev::new_mem(MIB).expect("valid size");
    for i in 0..4u64 {
        dev.write_at(&[i as u8; 4096], i * 4096, false)
            .expect("write");
        dev.flush().expect("flush");
    }
    dev.forget_before(3).expect("fold");
    assert_eq!(
        dev.flush_point(3).expect("held"),
        FlushPoint {
            point: 3,
            durable_writes: 3,
            completed_writes: 3
        }
    );
}

#[test]
fn shuffled_order_keeps_writes_that_were_never_in_flight_together_in_order() {
    let dev = FaultDev::new_mem(MIB).expect("valid size");
    dev.flush().expect("flush");
    for fill in 1..=6u8 {
        dev.write_at(&[fill; 1024], 0, false).expect("write");
    }
    for seed in 0..64 {
        let img = dev
            .crash_image(
                &CrashPlan::at(1)
                    .keep(Keep::All)
                    .order(ApplyOrder::Shuffled { seed }),
            )
            .expect("image");
        assert_eq!(img.applied, vec![0, 1, 2, 3, 4, 5], "seed {seed}");
        assert_eq!(read(&*img.dev, 0, 1024), vec![6u8; 1024], "seed {seed}");
    }
}

/// A device whose writes to byte 0 wait until the test lets them finish, so a second write
/// can be issued and complete while the first is in flight.
struct GatedWrite {
    mem: MemDev,
    entered: Mutex<mpsc::Sender<()>>,
    release: Mutex<mpsc::Receiver<()>>,
}

impl BlockDev for GatedWrite {
    fn size(&self) -> u64 {
        self.mem.size()
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<(), DevError> {
        self.mem.read_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64, fua: bool) -> Result<(), DevError> {
        if offset == 0 && buf[0] == 1 {
            let _ = self.entered.lock().expect("sender").send(());
            let _ = self.release.lock().expect("receiver").recv();
        }
        self.mem.write_at(buf, offset, fua)
    }
    fn flush(&self) -> Result<(), DevError> {
        self.mem.flush()
    }
    fn describe(&self) -> String {
        "gated".into()
    }
}

#[test]
fn shuffled_order_lands_overlapping_writes_in_flight_together_either_way() {
    let (entered_tx, entered_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel();
    let inner = Arc::new(GatedWrite {
        mem: MemDev::new(MIB).expect("valid size"),
        entered: Mutex::new(entered_tx),
        release: Mutex::new(release_rx),
    });
    let dev = Arc::new(FaultDev::new(inner).expect("wraps"));
    let slow = {
        let dev = Arc::clone(&dev);
        std::thread::spawn(move || dev.write_at(&[1u8; 1024], 0, false))
    };
    entered_rx.recv().expect("first write in flight");
    // Issued while the first is in flight, overlapping its second sector; completes first.
    dev.write_at(&[2u8; 1024], 512, false)
        .expect("second write");
    release_tx.send(()).expect("release");
    slow.join().expect("writer").expect("first write");
    // Then a write issued after both completed: it must land after both.
    dev.write_at(&[3u8; 512], 1024, false).expect("third write");

    let pending = dev.pending_writes(0).expect("held");
    assert_eq!(pending.len(), 3);
    assert_eq!(pending[0].offset, 512, "the second write completed first");
    assert_eq!(
        pending[1].issued.writes, 0,
        "the first was issued before any completed"
    );
    assert_eq!(pending[2].issued.writes, 2);

    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..64 {
        let img = dev
            .crash_image(
                &CrashPlan::at(0)
                    .keep(Keep::All)
                    .order(ApplyOrder::Shuffled { seed }),
            )
            .expect("image");
        assert_eq!(
            img.applied.last(),
            Some(&2),
            "seed {seed}: the third lands last"
        );
        let overlap = read(&*img.dev, 512, 512)[0];
        let expect = if img.applied[0] == 0 { 1 } else { 2 };
        assert_eq!(overlap, expect, "seed {seed}: the later-landing write wins");
        assert_eq!(read(&*img.dev, 1024, 512), vec![3u8; 512]);
        seen.insert(overlap);
    }
    assert_eq!(
        seen.into_iter().collect::<Vec<_>>(),
        vec![1, 2],
        "both orders occur across seeds"
    );
    let completion = dev
        .crash_image(&CrashPlan::at(0).keep(Keep::All))
        .expect("image");
    assert_eq!(read(&*completion.dev, 512, 512), vec![1u8; 512]);
}
