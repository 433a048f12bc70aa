//! The crash-consistency harness (`fslab::testing::crash`) on labfs: fs_mark `-S1`/`-S4`, fsx-like
//! random operations and ACE sequences, crashed at every flush point, each image mounted,
//! fsck'd and checked against what was acknowledged.
//!
//! Both sweeps run in CI: durable crash states (what flushes and FUA log writes made
//! durable) and states where unflushed writes landed, reordered or torn. The long run
//! (>= 100,000 crash images):
//!
//! ```text
//! cargo run --release --example crashtest -- --suite long --coverage unflushed --random 4 --jobs 2
//! ```

use std::collections::BTreeSet;

use fslab::fs::dev::fault::Event;
use fslab::fs::options::Options;
use fslab::testing::crash::DEVICE_SIZE;
use fslab::testing::crash::oracle::Finding;
use fslab::testing::crash::record::Recorder;
use fslab::testing::crash::sweep::sweep_recording;
use fslab::testing::crash::{
    Case, Coverage, Suite, SweepOptions, SweepReport, Workload, rerun, sweep, sweep_all,
};

fn failures(r: &SweepReport) -> String {
    r.failures
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn run_suite(coverage: Coverage) -> SweepReport {
    let options = Options::default();
    let workloads = Suite::Ci
        .workloads(&options)
        .expect("the suite's workloads");
    let opts = SweepOptions {
        coverage,
        seed: 1,
        stop_after: 3,
    };
    sweep_all(&workloads, &options, &opts, 2, &|_, _| {}).expect("the harness runs")
}

#[test]
fn every_durable_crash_point_of_the_ci_suite_recovers_everything_acknowledged() {
    let r = run_suite(Coverage::Durable);
    assert!(r.failures.is_empty(), "{r}\n{}", failures(&r));
    assert!(r.images >= 1000, "{r}");
}

#[test]
fn unflushed_writes_landing_reordered_or_torn_at_every_flush_point_of_the_ci_suite_recover() {
    let r = run_suite(Coverage::Unflushed { random: 4 });
    assert!(r.failures.is_empty(), "{r}\n{}", failures(&r));
    assert!(r.unflushed_images >= 1000, "{r}");
}

#[test]
fn a_filesystem_that_acknowledges_fsync_without_persisting_is_caught_with_a_rerun_command() {
    let options = Options::default();
    let workload: Workload = "fsmark:S=1,n=8".parse().expect("valid");
    let rec = Recorder::mkfs(DEVICE_SIZE, &options).expect("recorder");
    rec.acknowledge_without_persisting(true);
    workload.run(&rec).expect("runs");
    let recording = rec.finish().expect("finishes");
    let opts = SweepOptions {
        coverage: Coverage::Durable,
        seed: 1,
        stop_after: 0,
    };
    let r = sweep_recording(&workload, &recording, &opts).expect("sweeps");
    let lost = r
        .failures
        .iter()
        .find(|f| {
            f.checked
                .findings
                .iter()
                .any(|x| matches!(x, Finding::LostAck { .. }))
        })
        .unwrap_or_else(|| panic!("no lost acknowledgement found: {r}\n{}", failures(&r)));
    let text = lost.to_string();
    assert!(text.contains("acknowledged step"), "{text}");
    let command = format!(
        "rerun: cargo run --release --example crashtest -- --case '{}'",
        lost.case
    );
    assert!(text.contains(&command), "{text}");
    let back: Case = lost.case.to_string().parse().expect("the case parses back");
    assert_eq!(back, lost.case);

    // The same workload with fsync doing its job passes every durable state.
    let honest = sweep(&workload, &options, &opts).expect("sweeps");
    assert!(honest.failures.is_empty(), "{}", failures(&honest));
}

/// One device event as a replay compares it: (offset, length, FUA) of a write, `None` for
/// a flush.
type DeviceEvent = Option<(u64, u64, bool)>;

/// The device history of a recording and its operations.
fn device_history(w: &Workload) -> (Vec<DeviceEvent>, Vec<String>) {
    let rec = w.record(&Options::default()).expect("records");
    let events = rec
        .fault
        .events()
        .into_iter()
        .map(|e| match e {
            Event::Write(w) => Some((w.offset, w.len, w.fua)),
            Event::Flush { .. } => None,
        })
        .collect();
    let calls = rec.history.steps.iter().map(|s| s.call.clone()).collect();
    (events, calls)
}

#[test]
fn a_workload_replays_the_same_operations_and_device_writes_so_a_case_reruns_exactly() {
    for spec in [
        "fsx:seed=5,ops=200,files=3,max=65536",
        "fsmark:S=4,n=12",
        "ace:rename:A/foo:B/foo+write:B/bar:12000:1000+fsync:B",
    ] {
        let w: Workload = spec.parse().expect("valid");
        let (events, calls) = device_history(&w);
        assert_eq!(
            device_history(&w),
            (events, calls),
            "{spec}: a second run differs"
        );
    }
    let w: Workload = "fsx:seed=5,ops=200,files=3,max=65536"
        .parse()
        .expect("valid");
    let options = Options::default();
    let first = sweep(
        &w,
        &options,
        &SweepOptions {
            coverage: Coverage::Durable,
            seed: 1,
            stop_after: 0,
        },
    )
    .expect("sweeps");
    assert!(first.failures.is_empty(), "{}", failures(&first));
    // A crash point a few flushes after mkfs (the journal's log writes each flush first).
    let point = w.record(&options).expect("records").first_point + 4;
    let case: Case = format!("{w}@{point}.0.durable").parse().expect("valid");
    let again = rerun(&case, &options).expect("reruns");
    assert_eq!(again.spec, case.crash);
    assert!(again.findings.is_empty(), "{:?}", again.findings);
}

#[test]
fn the_ci_suite_covers_fsmark_fsx_and_every_one_operation_ace_sequence() {
    let workloads = Suite::Ci
        .workloads(&Options::default())
        .expect("the suite's workloads");
    let kinds: BTreeSet<&str> = workloads
        .iter()
        .map(|w| match w {
            Workload::Fsmark(f) if f.sync == 1 => "fsmark-S1",
            Workload::Fsmark(_) => "fsmark-S4",
            Workload::Fsx(_) => "fsx",
            Workload::Ace(a) if a.0.len() == 2 => "ace-1",
            Workload::Ace(_) => "ace-2",
        })
        .collect();
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
        ["ace-1", "ace-2", "fsmark-S1", "fsmark-S4", "fsx"]
    );
}
