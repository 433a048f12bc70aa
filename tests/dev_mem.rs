//! The `mem` device: contents, sparseness, request checks, crash semantics, concurrency.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use fslab::fs::dev::spec::DeviceSpec;
use fslab::fs::dev::{self, BlockDev, DevError, MemDev};

const MIB: u64 = 1 << 20;

fn pattern(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| seed.wrapping_mul(31).wrapping_add(i as u8))
        .collect()
}

fn read(d: &dyn BlockDev, offset: u64, len: usize) -> Vec<u8> {
    let mut b = vec![0xEE; len];
    d.read_at(&mut b, offset).expect("read in range");
    b
}

#[test]
fn read_after_write_returns_the_bytes_across_page_boundaries() {
    let d = MemDev::new(4 * MIB).expect("valid size");
    // 3 KiB + 512 starting 512 bytes before a page boundary, then a 12 KiB aligned run.
    let a = pattern(1, 3584);
    let b = pattern(2, 12288);
    d.write_at(&a, 3584, false).expect("write a");
    d.write_at(&b, 65536, false).expect("write b");
    assert_eq!(read(&d, 3584, a.len()), a);
    assert_eq!(read(&d, 65536, b.len()), b);
    // A read straddling written and unwritten sectors.
    let mixed = read(&d, 65536 + 12288 - 512, 1024);
    assert_eq!(&mixed[..512], &b[12288 - 512..]);
    assert!(mixed[512..].iter().all(|&x| x == 0));
}

#[test]
fn unwritten_sectors_read_as_zeroes_without_using_memory() {
    let d = MemDev::new(1 << 30).expect("valid size");
    assert!(read(&d, 500 * MIB, 65536).iter().all(|&x| x == 0));
    assert_eq!(d.resident_bytes(), 0);
    d.write_at(&[1u8; 512], 700 * MIB, false).expect("write");
    assert_eq!(d.resident_bytes(), 4096);
    assert!(read(&d, 700 * MIB + 512, 3584).iter().all(|&x| x == 0));
    assert_eq!(read(&d, 700 * MIB, 512), vec![1u8; 512]);
}

#[test]
fn misaligned_and_out_of_range_requests_are_refused() {
    let d = MemDev::new(MIB).expect("valid size");
    let mut b = vec![0u8; 512];
    assert!(matches!(
        d.read_at(&mut b, 100),
        Err(DevError::Misaligned { .. })
    ));
    assert!(matches!(
        d.write_at(&b[..100], 0, false),
        Err(DevError::Misaligned { .. })
    ));
    assert!(matches!(
        d.write_at(&b, MIB, false),
        Err(DevError::OutOfRange { size, .. }) if size == MIB
    ));
    let mut big = vec![0u8; 1024];
    assert!(matches!(
        d.read_at(&mut big, MIB - 512),
        Err(DevError::OutOfRange { .. })
    ));
    // Nothing was written by the refused requests.
    assert_eq!(d.resident_bytes(), 0);
    let e = d.write_at(&b, 100, true).expect_err("misaligned");
    assert_eq!(
        e.to_string(),
        "FUA write of 512 bytes at byte 100 on mem:1MiB is misaligned: offset and length must be multiples of 512"
    );
}

#[test]
fn crash_drops_unflushed_writes_and_keeps_flushed_and_fua_ones() {
    let d = MemDev::new(4 * MIB).expect("valid size");
    let flushed = pattern(1, 8192);
    let overwritten_later = pattern(2, 4096);
    let fua = pattern(3, 1024);
    let lost = pattern(4, 8192);
    d.write_at(&flushed, 0, false).expect("write");
    d.write_at(&overwritten_later, 65536, false).expect("write");
    d.flush().expect("flush");
    d.write_at(&fua, 131072, true).expect("fua write");
    d.write_at(&lost, 196608, false).expect("write");
    d.write_at(&pattern(5, 4096), 65536, false)
        .expect("overwrite");
    // Before the crash, reads see everything.
    assert_eq!(read(&d, 196608, 8192), lost);
    d.crash();
    assert_eq!(read(&d, 0, 8192), flushed);
    assert_eq!(read(&d, 65536, 4096), overwritten_later);
    assert_eq!(read(&d, 131072, 1024), fua);
    assert!(read(&d, 196608, 8192).iter().all(|&x| x == 0));
}

#[test]
fn fua_write_into_an_unflushed_page_survives_while_its_neighbours_revert() {
    let d = MemDev::new(MIB).expect("valid size");
    d.write_at(&[1u8; 4096], 0, false).expect("write");
    d.flush().expect("flush");
    d.write_at(&[2u8; 4096], 0, false)
        .expect("unflushed overwrite");
    d.write_at(&[3u8; 512], 1024, true)
        .expect("fua into the same page");
    d.crash();
    let got = read(&d, 0, 4096);
    assert!(got[..1024].iter().all(|&x| x == 1));
    assert!(got[1024..1536].iter().all(|&x| x == 3));
    assert!(got[1536..].iter().all(|&x| x == 1));
}

#[test]
fn device_keeps_working_after_a_crash_and_a_second_crash_changes_nothing_durable() {
    let d = MemDev::new(MIB).expect("valid size");
    d.write_at(&[1u8; 512], 0, false).expect("write");
    d.flush().expect("flush");
    d.write_at(&[2u8; 512], 0, false).expect("write");
    d.crash();
    assert_eq!(read(&d, 0, 512), vec![1u8; 512]);
    d.write_at(&[3u8; 512], 0, false)
        .expect("write after crash");
    d.crash();
    assert_eq!(read(&d, 0, 512), vec![1u8; 512]);
    d.write_at(&[4u8; 512], 0, false).expect("write");
    d.flush().expect("flush");
    d.crash();
    assert_eq!(read(&d, 0, 512), vec![4u8; 512]);
}

#[test]
fn flipped_bits_show_in_reads_and_survive_a_crash() {
    let d = MemDev::new(MIB).expect("valid size");
    d.write_at(&[0xF0u8; 512], 4096, false).expect("write");
    d.flush().expect("flush");
    d.write_at(&[0x0Fu8; 512], 4096, false)
        .expect("unflushed write");
    d.flip_bits(4096 + 17, 0x81).expect("in range");
    assert_eq!(read(&d, 4096, 512)[17], 0x0F ^ 0x81);
    d.crash();
    let got = read(&d, 4096, 512);
    assert_eq!(got[17], 0xF0 ^ 0x81);
    assert_eq!(got.iter().filter(|&&x| x != 0xF0).count(), 1);
    assert!(matches!(
        d.flip_bits(MIB, 1),
        Err(DevError::OutOfRange { .. })
    ));
}

#[test]
fn snapshot_is_an_independent_durable_copy() {
    let d = MemDev::new(MIB).expect("valid size");
    d.write_at(&pattern(7, 4096), 8192, false).expect("write");
    let s = d.snapshot();
    d.write_at(&[0u8; 4096], 8192, false)
        .expect("overwrite original");
    assert_eq!(read(&s, 8192, 4096), pattern(7, 4096));
    s.crash();
    assert_eq!(read(&s, 8192, 4096), pattern(7, 4096));
    assert_eq!(s.resident_bytes(), 4096);
}

#[test]
fn concurrent_writers_to_distinct_sectors_all_land_and_flush_makes_them_durable() {
    let d = Arc::new(MemDev::new(16 * MIB).expect("valid size"));
    let threads: Vec<_> = (0..4u8)
        .map(|t| {
            let d = Arc::clone(&d);
            std::thread::spawn(move || {
                for i in 0..256u64 {
                    // Interleave threads sector by sector so they share pages.
                    let off = (i * 4 + u64::from(t)) * 512;
                    d.write_at(&[t + 1; 512], off, false).expect("write");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("writer thread");
    }
    d.flush().expect("flush");
    d.crash();
    let all = read(&*d, 0, 256 * 4 * 512);
    for (s, sector) in all.chunks(512).enumerate() {
        let want = (s % 4) as u8 + 1;
        assert!(sector.iter().all(|&x| x == want), "sector {s}");
    }
}

#[test]
fn overlapping_concurrent_requests_are_atomic_per_sector() {
    let d = Arc::new(MemDev::new(MIB).expect("valid size"));
    let stop = Arc::new(AtomicBool::new(false));
    // Two writers overwrite the same 24 KiB (crossing pages, unaligned to pages) with
    // uniform fills; a reader checks that every sector it sees is uniform.
    let writers: Vec<_> = [0xAAu8, 0x55u8]
        .into_iter()
        .map(|fill| {
            let d = Arc::clone(&d);
            std::thread::spawn(move || {
                let buf = vec![fill; 24576];
                for _ in 0..400 {
                    d.write_at(&buf, 2048, false).expect("write");
                }
            })
        })
        .collect();
    let reader = {
        let d = Arc::clone(&d);
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut torn = 0;
            let mut buf = vec![0u8; 24576];
            while !stop.load(Ordering::Relaxed) {
                d.read_at(&mut buf, 2048).expect("read");
                torn += buf
                    .chunks(512)
                    .filter(|s| s.iter().any(|&x| x != s[0]))
                    .count();
            }
            torn
        })
    };
    for w in writers {
        w.join().expect("writer thread");
    }
    stop.store(true, Ordering::Relaxed);
    assert_eq!(reader.join().expect("reader thread"), 0);
}

#[test]
fn open_builds_a_mem_device_from_its_spec() {
    let spec: DeviceSpec = "mem:8m".parse().expect("valid spec");
    let d = dev::open(&spec).expect("opens");
    assert_eq!(d.size(), 8 * MIB);
    assert_eq!(d.sector_size(), 512);
    assert_eq!(d.describe(), "mem:8MiB");
    d.write_at(&[9u8; 512], 8 * MIB - 512, false)
        .expect("last sector");
    assert_eq!(read(&*d, 8 * MIB - 512, 512), vec![9u8; 512]);
    let default = dev::open(&DeviceSpec::default()).expect("default opens");
    assert_eq!(default.size(), 1 << 30);
}
