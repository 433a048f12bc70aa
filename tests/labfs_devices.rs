//! labfs on every kind of device the fixtures make (memory, file, stripe, fault shim): the
//! same files and data survive unmount and remount, and fsck is clean, whatever is below.

mod common;

use std::sync::Arc;

use fslab::fs::Fs;
use fslab::fs::dev::fault::{CrashPlan, Keep};
use fslab::rng::SplitMix64;

use common::image::{self, Image, ImageBuilder, assert_clean};

/// Data large enough to cross stripe units (64 KiB) and several extents.
fn payload(seed: u64) -> Vec<u8> {
    let mut data = vec![0u8; 300_000];
    SplitMix64::new(seed).fill(&mut data);
    data
}

fn write_tree(fs: &Fs, data: &[u8]) {
    let root = fs.root().unwrap();
    let d = fs.mkdir(&root, b"dir", 0o755).unwrap();
    let (f, created) = fs.create(&d, b"file", 0o644, true).unwrap();
    assert!(created);
    assert_eq!(fs.write(&f, 0, data).unwrap(), data.len());
    fs.fsync(&f, false).unwrap();
}

fn read_back(fs: &Fs) -> Vec<u8> {
    let f = fs.lookup_path(b"/dir/file").unwrap();
    let mut back = vec![0u8; 400_000];
    let n = fs.read(&f, 0, &mut back).unwrap();
    back.truncate(n);
    back
}

/// Build, write, remount, read back, fsck: the round trip every device must carry.
fn round_trip(builder: ImageBuilder, seed: u64) -> Image {
    let (img, fs) = builder.mount();
    let data = payload(seed);
    write_tree(&fs, &data);
    let fs = img.remount(fs);
    assert_eq!(read_back(&fs), data, "{:?}", img.kind());
    assert_clean(&fs, &format!("{:?} after remount", img.kind()));
    fs.unmount().unwrap();
    img
}

#[test]
fn a_memory_image_keeps_files_across_remount() {
    round_trip(image::mem(32 << 20), 1);
}

#[test]
fn a_file_image_keeps_files_for_the_next_opener_of_the_file() {
    let img = round_trip(image::file(32 << 20).options("agcount=2"), 2);
    let fs = Fs::mount(img.reopen(), img.options.mount.clone()).unwrap();
    assert_eq!(read_back(&fs), payload(2));
    assert_eq!(fs.geo.agcount, 2, "the image was made with its options");
}

#[test]
fn a_striped_image_keeps_files_across_remount() {
    let img = round_trip(image::stripe(3, 16 << 20), 3);
    assert_eq!(img.dev.size(), 48 << 20);
}

#[test]
fn a_fault_shim_image_records_flushes_and_its_crash_images_mount() {
    let (img, fs) = image::fault(32 << 20).mount();
    let data = payload(4);
    write_tree(&fs, &data);
    let after_fsync = img.fault().flush_count();
    let crashed = img
        .fault()
        // The fsync's log write is FUA: it is durable once it completed, which the shim
        // models by keeping the writes pending after the fsync's flush.
        .crash_image(&CrashPlan::at(after_fsync).keep(Keep::All))
        .unwrap();
    drop(fs);
    let fs = Fs::mount(crashed.dev as Arc<_>, img.options.mount.clone()).unwrap();
    assert_eq!(read_back(&fs), data, "the fsync'd file survives the crash");
    assert_clean(&fs, "crash image at the fsync's flush");
}

#[test]
fn a_flipped_bit_reaches_the_device_and_fails_the_mount() {
    let img = image::mem(16 << 20).build();
    // Byte 8 of sector 0 is in the primary superblock's dblocks field; the CRC no longer
    // matches, so the mount must refuse.
    img.flip(8, 0x01);
    let dev = Arc::clone(&img.dev);
    assert!(Fs::mount(dev, img.options.mount.clone()).is_err());
    img.flip(8, 0x01);
    img.mount();
}
