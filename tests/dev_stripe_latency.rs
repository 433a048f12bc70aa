//! `stripe:N` address mapping (checked through the members) and the latency model's delays.
//!
//! Timing tests assert only lower bounds: a modelled cost that must have been paid. Upper
//! bounds would flake on a loaded machine; the model's arithmetic (what overlaps, what
//! serialises) is pinned exactly by unit tests on fixed instants in `latency.rs` and
//! `stripe.rs`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use fslab::fs::dev::fault::{AfterFail, FailRule};
use fslab::fs::dev::spec::DeviceSpec;
use fslab::fs::dev::stripe::StripeMember;
use fslab::fs::dev::{
    self, BlockDev, DevError, FaultDev, IoKind, LatencyDev, LatencyParams, MemDev, StripeDev,
};

const MIB: u64 = 1 << 20;

fn mem(size: u64) -> Arc<MemDev> {
    Arc::new(MemDev::new(size).expect("valid size"))
}

fn read(d: &dyn BlockDev, offset: u64, len: usize) -> Vec<u8> {
    let mut b = vec![0u8; len];
    d.read_at(&mut b, offset).expect("read in range");
    b
}

#[test]
fn write_spanning_stripe_units_lands_on_the_right_members_at_the_right_offsets() {
    let members: Vec<Arc<MemDev>> = (0..3).map(|_| mem(MIB)).collect();
    let stripe = StripeDev::new(
        members
            .iter()
            .map(|m| StripeMember::plain(Arc::clone(m) as Arc<dyn BlockDev>))
            .collect(),
        8192,
    )
    .expect("valid stripe");
    // Units of 8 KiB dealt over 3 members. Write 5 units' worth starting 1 KiB into unit 2,
    // each 512-byte sector filled with its own number so every piece is recognisable.
    let start = 2 * 8192 + 1024;
    let sectors = 5 * 16;
    let buf: Vec<u8> = (0..sectors).flat_map(|s| [s as u8; 512]).collect();
    stripe.write_at(&buf, start, false).expect("write");

    // Worked out by hand: unit 2 -> member 2 at 0; unit 3 -> member 0 at 8 KiB;
    // unit 4 -> member 1 at 8 KiB; unit 5 -> member 2 at 8 KiB; unit 6 -> member 0 at 16 KiB;
    // unit 7 -> member 1 at 16 KiB (only its first 1 KiB).
    let expect = [
        (2usize, 1024u64, 0u8, 14usize), // rest of unit 2: sectors 0..14
        (0, 8192, 14, 16),
        (1, 8192, 30, 16),
        (2, 8192, 46, 16),
        (0, 16384, 62, 16),
        (1, 16384, 78, 2),
    ];
    for (member, offset, first_sector, count) in expect {
        let got = read(&*members[member], offset, count * 512);
        let want: Vec<u8> = (0..count)
            .flat_map(|i| [first_sector + i as u8; 512])
            .collect();
        assert_eq!(got, want, "member {member} at {offset}");
    }
    // Nothing else was written: the first KiB of unit 2 and unit 1 (member 1 at 0) are empty.
    assert!(read(&*members[2], 0, 1024).iter().all(|&x| x == 0));
    assert!(read(&*members[1], 0, 8192).iter().all(|&x| x == 0));
    // And the stripe reads back what it wrote.
    assert_eq!(read(&stripe, start, buf.len()), buf);
}

#[test]
fn stripe_size_is_whole_units_of_the_smallest_member() {
    let members = vec![
        StripeMember::plain(mem(MIB)),
        StripeMember::plain(mem(MIB + 40960)),
    ];
    let s = StripeDev::new(members, 65536).expect("valid stripe");
    assert_eq!(s.size(), 2 * MIB);
    assert!(matches!(
        s.write_at(&[0u8; 512], 2 * MIB, false),
        Err(DevError::OutOfRange { .. })
    ));
    let too_small = StripeDev::new(vec![StripeMember::plain(mem(32768))], 65536);
    assert!(matches!(too_small, Err(DevError::Config(_))));
    assert!(matches!(
        StripeDev::new(Vec::new(), 65536),
        Err(DevError::Config(_))
    ));
}

#[test]
fn stripe_flush_flushes_every_member_and_fua_reaches_each_piece() {
    let members: Vec<Arc<FaultDev>> = (0..4)
        .map(|_| Arc::new(FaultDev::new_mem(MIB).expect("valid size")))
        .collect();
    let s = StripeDev::new(
        members
            .iter()
            .map(|m| StripeMember::plain(Arc::clone(m) as Arc<dyn BlockDev>))
            .collect(),
        4096,
    )
    .expect("valid stripe");
    s.write_at(&[1u8; 16384], 0, true)
        .expect("fua write over all members");
    s.flush().expect("flush");
    for (i, m) in members.iter().enumerate() {
        assert_eq!(m.flush_count(), 1, "member {i}");
        let writes = m.pending_writes(0).expect("point 0");
        assert_eq!(writes.len(), 1, "member {i}");
        assert!(writes[0].fua && writes[0].len == 4096, "member {i}");
    }
}

#[test]
fn member_failure_fails_the_stripe_request() {
    let bad = Arc::new(FaultDev::new_mem(MIB).expect("valid size"));
    bad.fail(FailRule {
        kind: IoKind::Write,
        nth: 1,
        then: AfterFail::Recover,
    });
    let s = StripeDev::new(
        vec![
            StripeMember::plain(mem(MIB)),
            StripeMember::plain(Arc::clone(&bad) as Arc<dyn BlockDev>),
        ],
        4096,
    )
    .expect("valid stripe");
    assert!(s.write_at(&[1u8; 4096], 0, false).is_ok());
    assert!(matches!(
        s.write_at(&[1u8; 8192], 0, false),
        Err(DevError::Injected { .. })
    ));
    assert!(s.write_at(&[1u8; 8192], 0, false).is_ok());
}

#[test]
fn open_builds_a_stripe_of_mem_members_from_its_spec() {
    let spec: DeviceSpec = "stripe:4,su=8k,mem:1m".parse().expect("valid spec");
    let d = dev::open(&spec).expect("opens");
    assert_eq!(d.size(), 4 * MIB);
    assert_eq!(d.describe(), "stripe:4 su=8KiB 4MiB over 4x mem:1MiB");
    let data: Vec<u8> = (0..65536u32).map(|i| (i % 251) as u8).collect();
    d.write_at(&data, 4 * MIB - 65536, false)
        .expect("write at the end");
    assert_eq!(read(&*d, 4 * MIB - 65536, 65536), data);
    let mixed: DeviceSpec = "stripe:2,mem:1m,lat=5us,mem:2m"
        .parse()
        .expect("valid spec");
    let d = dev::open(&mixed).expect("opens");
    assert_eq!(d.size(), 2 * MIB);
    assert_eq!(
        d.describe(),
        "stripe:2 su=64KiB 2MiB over mem:1MiB lat=5us, mem:2MiB"
    );
}

#[test]
fn flush_bound_loop_pays_the_flush_cost_every_time() {
    let flush = Duration::from_millis(2);
    let d = LatencyDev::new(
        mem(MIB),
        LatencyParams {
            flush,
            ..LatencyParams::NONE
        },
    );
    let n = 10;
    let t = Instant::now();
    for i in 0..n {
        d.write_at(&[1u8; 4096], i * 4096, false).expect("write");
        d.flush().expect("flush");
    }
    assert!(t.elapsed() >= flush * n as u32, "{:?}", t.elapsed());
    assert_eq!(d.describe(), "mem:1MiB flush=2ms");
}

#[test]
fn transfers_take_at_least_bytes_over_bandwidth() {
    // 16 MiB/s: 1 MiB takes 62.5 ms however it is split.
    let bw = 16 << 20;
    let d = LatencyDev::new(
        mem(4 * MIB),
        LatencyParams {
            bw: Some(bw),
            ..LatencyParams::NONE
        },
    );
    let t = Instant::now();
    for i in 0..16 {
        d.write_at(&[2u8; 65536], i * 65536, false).expect("write");
    }
    assert!(
        t.elapsed() >= Duration::from_micros(62_500),
        "{:?}",
        t.elapsed()
    );
    // Reads pay too.
    let t = Instant::now();
    let mut b = vec![0u8; MIB as usize];
    d.read_at(&mut b, 0).expect("read");
    assert!(
        t.elapsed() >= Duration::from_micros(62_500),
        "{:?}",
        t.elapsed()
    );
    assert!(b.iter().all(|&x| x == 2));
}

#[test]
fn every_request_pays_its_latency() {
    let lat = Duration::from_millis(1);
    let d = LatencyDev::new(
        mem(MIB),
        LatencyParams {
            lat,
            ..LatencyParams::NONE
        },
    );
    let t = Instant::now();
    let mut b = [0u8; 512];
    for _ in 0..5 {
        d.read_at(&mut b, 0).expect("read");
        d.write_at(&b, 512, false).expect("write");
    }
    assert!(t.elapsed() >= lat * 10, "{:?}", t.elapsed());
}

#[test]
fn fua_write_pays_the_flush_cost() {
    let flush = Duration::from_millis(3);
    let d = LatencyDev::new(
        mem(MIB),
        LatencyParams {
            flush,
            ..LatencyParams::NONE
        },
    );
    let t = Instant::now();
    for _ in 0..4 {
        d.write_at(&[1u8; 512], 0, true).expect("fua write");
    }
    assert!(t.elapsed() >= flush * 4, "{:?}", t.elapsed());
}

#[test]
fn stripe_members_each_pay_their_own_model() {
    // Each member moves 512 KiB at 16 MiB/s (31.25 ms) for a 1 MiB write over 2 members.
    let spec: DeviceSpec = "stripe:2,su=64k,mem:1m,bw=16m".parse().expect("valid spec");
    let d = dev::open(&spec).expect("opens");
    let t = Instant::now();
    d.write_at(&vec![3u8; MIB as usize], MIB / 2, false)
        .expect("write");
    assert!(
        t.elapsed() >= Duration::from_micros(31_250),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(read(&*d, MIB / 2, 512), vec![3u8; 512]);
}
