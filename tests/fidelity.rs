//! labfs's XFS statistics against kernel XFS's, per file, for every recorded fixture workload
//! (`tests/fixtures/kernel`, recorded by `scripts/record_kernel_fixtures.sh`).
//!
//! Each test runs its fixture's fsmark command on a fresh labfs in-process, as recorded:
//! every file, every option (sync method, file size, threads, subdirectories). Full size,
//! because the kernel's figures are full-size figures: the work per file of a B+tree grows
//! with the tree (compares with its depth and width, shifts once a leaf fills), a directory
//! outgrows its inode only past some number of entries, and one-off costs (the first reads
//! of a fresh mount) weigh ten times as much per file in a tenth of the files; a run at a
//! tenth of the files would be compared with a kernel that built bigger trees. All seven
//! take a few seconds. The device is the fidelity device
//! (`fslab::workload::fidelity::FIDELITY_DEVICE`): 4 GiB, four allocation groups of 1 GiB
//! like the fixtures' `mkfs.xfs` defaults, with flushes that take time as the recording's
//! loop device's did. A test fails when a field the fidelity table holds to the band
//! (`fslab::workload::fidelity::table`) leaves it; the side-by-side table is printed either
//! way (`cargo test --test fidelity -- --nocapture`), as `fsmark --stats-compare
//! tests/fixtures/kernel/NAME` prints it.

use std::path::Path;

use fslab::backend::open::LabConfig;
use fslab::cli::fsmark::fixture_config;
use fslab::workload::fidelity::{Comparison, FIDELITY_DEVICE, Fixture, run_on_fresh_labfs};

fn compare(name: &str) -> Comparison {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/kernel")
        .join(name);
    let fixture = Fixture::load(&dir).expect("fixture");
    let (config, _) = fixture_config(&fixture, &dir).expect("the fixture's command");
    let lab = LabConfig::new(FIDELITY_DEVICE.parse().expect("device"));
    let run = run_on_fresh_labfs(&lab, &config).expect("labfs run");
    assert_eq!(
        run.files,
        u64::from(config.num_files) * u64::from(config.threads),
        "files made"
    );
    Comparison::new(&fixture, &run)
}

fn check(name: &str) {
    let c = compare(name);
    let table = c.render();
    println!("{table}");
    let outside: Vec<String> = c
        .outside()
        .map(|r| {
            format!(
                "{} {}: kernel {:.3}/file, labfs {:.3}/file",
                r.line, r.field, r.kernel_per_file, r.lab_per_file
            )
        })
        .collect();
    assert!(
        outside.is_empty(),
        "{name}: fields outside the band:\n  {}\n\n{table}",
        outside.join("\n  ")
    );
}

#[test]
fn s0_no_sync_empty_files() {
    check("s0-n20000");
}

#[test]
fn s1_fsync_4k_one_thread() {
    check("s1-4k-n2000-t1");
}

#[test]
fn s1_fsync_4k_two_threads() {
    check("s1-4k-n2000-t2");
}

#[test]
fn s1_fsync_64k() {
    check("s1-64k-n1000");
}

#[test]
fn s2_sync_then_fsync_first() {
    check("s2-4k-n2000");
}

#[test]
fn s3_reverse_fsync_pass() {
    check("s3-4k-n2000");
}

#[test]
fn s4_sync_and_reverse_fsync_16_subdirs() {
    check("s4-4k-n2000-D16");
}

/// A fixture of a small workload, written into a temporary directory.
fn small_fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("meta.txt"),
        "workload: small\ncommand: fsmark --fs host -d MNT/t -S0 -s 0 -n 50\nfiles: 50\n",
    )
    .expect("meta");
    std::fs::write(dir.path().join("stats.txt"), "dir 50 50 50 0\n").expect("stats");
    dir
}

#[test]
fn stats_compare_runs_on_the_fidelity_device_unless_told_otherwise() {
    let fixture = small_fixture();
    let run = |extra: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_fsmark"))
            .arg("--stats-compare")
            .arg(fixture.path())
            .args(extra)
            .output()
            .expect("fsmark");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    };
    let default = run(&[]);
    assert!(
        default.contains("Backend: labfs on mem:4GiB flush=220us"),
        "{default}"
    );
    assert!(default.contains("fidelity "), "{default}");
    assert!(default.contains("fields compared"), "{default}");
    let given = run(&["--device", "mem:64m"]);
    assert!(given.contains("Backend: labfs on mem:64MiB "), "{given}");
}
