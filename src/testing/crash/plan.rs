//! Crash states: when the power failed, and which unflushed writes reached the media.
//!
//! A crash state is a moment plus a choice. The moment is a flush point `k` and the number
//! `j` of that point's pending writes that had completed (the fault shim's pending list of
//! point `k` holds, in completion order, the writes that may or may not have landed in a
//! crash before flush `k+1` completed). The crash is the last instant with `k` flushes and
//! those `j` writes completed, a device [`Position`]: every operation acknowledged by then is
//! owed, and no write issued after it can be on the media. At that instant:
//!
//! - writes made durable by flush `k`, and FUA writes among the `j`, are on the media;
//! - the other `j` completed writes sit in the volatile cache: any subset may have reached
//!   the media, in any order (a cache destages as it likes; of two writes to one sector the
//!   later one wins unless both were in flight together);
//! - writes in flight (issued by then, not completed) may have landed too, wholly or torn at
//!   512-byte sectors.
//!
//! [`Landing`] picks one of those outcomes, seeded so a state is reproducible:
//!
//! | landing | unflushed writes on the media | models |
//! |---|---|---|
//! | `durable` | none (only FUA ones) | crash right after a flush or FUA write |
//! | `completed` | all `j` completed, in order | an in-order device; `j` = all pending is a crash just before the next flush |
//! | `subset-S` | a random subset of the completed and in-flight ones | a reordering cache |
//! | `shuffled-S` | a random subset, landing in a random order the device could have used | reordered completion of concurrent writes |
//! | `torn-S` | a random subset, and the write in flight torn at random sectors | power failing mid-write |
//!
//! The text form `k.j.landing` (e.g. `12.3.subset-91`) is what a failure prints and a rerun
//! parses.

use std::fmt;
use std::str::FromStr;

use crate::fs::dev::SECTOR_SIZE;
use crate::fs::dev::fault::{
    ApplyOrder, CrashPlan, FaultDev, Keep, Position, SectorPick, Tear, TearTarget, WriteInfo,
};
use crate::rng::SplitMix64;
use crate::testing::crash::HarnessError;

/// Which of the unflushed writes land; see the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Landing {
    /// Only what flushes and FUA made durable.
    Durable,
    /// Every completed write, in completion order.
    Completed,
    /// A seeded random subset of the completed and in-flight writes.
    Subset(u64),
    /// A seeded random subset landing in a seeded legal order.
    Shuffled(u64),
    /// A seeded random subset of the completed writes, plus the write in flight torn.
    Torn(u64),
}

impl fmt::Display for Landing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Landing::Durable => f.write_str("durable"),
            Landing::Completed => f.write_str("completed"),
            Landing::Subset(s) => write!(f, "subset-{s}"),
            Landing::Shuffled(s) => write!(f, "shuffled-{s}"),
            Landing::Torn(s) => write!(f, "torn-{s}"),
        }
    }
}

impl FromStr for Landing {
    type Err = HarnessError;

    fn from_str(s: &str) -> Result<Landing, HarnessError> {
        let bad = || HarnessError::BadCase(format!("unknown landing {s:?}"));
        let seed = |t: &str| t.parse::<u64>().map_err(|_| bad());
        Ok(match s.split_once('-') {
            None if s == "durable" => Landing::Durable,
            None if s == "completed" => Landing::Completed,
            Some(("subset", t)) => Landing::Subset(seed(t)?),
            Some(("shuffled", t)) => Landing::Shuffled(seed(t)?),
            Some(("torn", t)) => Landing::Torn(seed(t)?),
            _ => return Err(bad()),
        })
    }
}

/// One crash state: flush point, completed pending writes, landing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CrashSpec {
    /// The flush point.
    pub point: u64,
    /// How many of its pending writes had completed.
    pub completed: usize,
    /// Which unflushed writes land.
    pub landing: Landing,
}

impl fmt::Display for CrashSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.point, self.completed, self.landing)
    }
}

impl FromStr for CrashSpec {
    type Err = HarnessError;

    fn from_str(s: &str) -> Result<CrashSpec, HarnessError> {
        let bad =
            || HarnessError::BadCase(format!("crash state {s:?} is not POINT.COMPLETED.LANDING"));
        let mut parts = s.splitn(3, '.');
        let point = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        let completed = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        let landing = parts.next().ok_or_else(bad)?.parse()?;
        Ok(CrashSpec {
            point,
            completed,
            landing,
        })
    }
}

/// A crash state resolved against a device log: the image to build and the crash moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The fault shim's plan.
    pub plan: CrashPlan,
    /// The crash moment.
    pub crash: Position,
    /// The point's pending writes.
    pub pending: Vec<WriteInfo>,
}

/// A point's pending writes and where they stand.
struct PointWrites {
    pending: Vec<WriteInfo>,
    /// Pending writes completed when the flush completed (the fewest a crash can see).
    first: usize,
    /// Global index of the first pending write.
    base: u64,
}

fn point_writes(fault: &FaultDev, k: u64) -> Result<PointWrites, HarnessError> {
    let fp = fault.flush_point(k)?;
    let pending = fault.pending_writes(k)?;
    let first = (fp.completed_writes - fp.durable_writes) as usize;
    Ok(PointWrites {
        pending,
        first,
        base: fp.durable_writes,
    })
}

/// The crash moment after `j` of point `k`'s pending writes completed.
fn moment(pw: &PointWrites, k: u64, j: usize) -> Position {
    Position {
        flushes: k,
        writes: pw.base + j as u64,
    }
}

/// Pending writes in flight at that moment: issued by then, not completed.
fn in_flight(pw: &PointWrites, k: u64, j: usize) -> Vec<usize> {
    let crash = moment(pw, k, j);
    (j..pw.pending.len())
        .filter(|&p| pw.pending[p].issued.reached_by(crash))
        .collect()
}

/// Writes in flight at that moment that span more than one sector, so can tear.
fn tearable(pw: &PointWrites, k: u64, j: usize) -> Vec<usize> {
    in_flight(pw, k, j)
        .into_iter()
        .filter(|&p| pw.pending[p].len >= 2 * SECTOR_SIZE)
        .collect()
}

fn can_tear(pw: &PointWrites, k: u64, j: usize) -> bool {
    !tearable(pw, k, j).is_empty()
}

/// Resolve a crash state against the fault shim's log.
pub fn resolve(fault: &FaultDev, spec: &CrashSpec) -> Result<Resolved, HarnessError> {
    let pw = point_writes(fault, spec.point)?;
    let n = pw.pending.len();
    let j = spec.completed;
    if j < pw.first || j > n {
        return Err(HarnessError::BadCase(format!(
            "flush point {} has {n} pending writes, {} completed with the flush: {j} completed \
             is not possible",
            spec.point, pw.first
        )));
    }
    let crash = moment(&pw, spec.point, j);
    let completed = 0..j;
    let in_flight = in_flight(&pw, spec.point, j);
    let fua: Vec<usize> = completed.clone().filter(|&p| pw.pending[p].fua).collect();
    let optional = |rng: &mut SplitMix64, with_in_flight: bool| -> Vec<usize> {
        let mut keep: Vec<usize> = completed
            .clone()
            .filter(|&p| pw.pending[p].fua || rng.coin())
            .collect();
        if with_in_flight {
            keep.extend(in_flight.iter().copied().filter(|_| rng.coin()));
        }
        keep
    };
    let mut plan = CrashPlan::at(spec.point);
    match spec.landing {
        Landing::Durable => plan = plan.keep(Keep::Subset(fua)),
        Landing::Completed => plan = plan.keep(Keep::Subset(completed.collect())),
        Landing::Subset(seed) => {
            let mut rng = SplitMix64::new(seed);
            plan = plan.keep(Keep::Subset(optional(&mut rng, true)));
        }
        Landing::Shuffled(seed) => {
            let mut rng = SplitMix64::new(seed);
            let keep = optional(&mut rng, true);
            plan = plan.keep(Keep::Subset(keep)).order(ApplyOrder::Shuffled {
                seed: rng.next_u64(),
            });
        }
        Landing::Torn(seed) => {
            let mut rng = SplitMix64::new(seed);
            let tearable = tearable(&pw, spec.point, j);
            if tearable.is_empty() {
                return Err(HarnessError::BadCase(format!(
                    "no multi-sector write is in flight at {}.{j}",
                    spec.point
                )));
            }
            let torn = tearable[rng.below(tearable.len() as u64) as usize];
            let mut keep = optional(&mut rng, false);
            keep.push(torn);
            plan = plan.keep(Keep::Subset(keep)).tear(Tear {
                target: TearTarget::Index(torn),
                sectors: SectorPick::Random {
                    seed: rng.next_u64(),
                },
            });
        }
    }
    Ok(Resolved {
        plan,
        crash,
        pending: pw.pending,
    })
}

/// How many crash states to try at each flush point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coverage {
    /// Only durable states: right after each flush and each FUA write. All labfs without a
    /// journal promises.
    Durable,
    /// Those, plus every pending write landing, plus `random` seeded states per point
    /// (prefixes, subsets, shuffles, tears).
    Unflushed {
        /// Random states per flush point.
        random: u32,
    },
}

/// The crash states to try at flush point `k`, deterministic for a given `seed`.
pub fn states_at(
    fault: &FaultDev,
    k: u64,
    coverage: Coverage,
    seed: u64,
) -> Result<Vec<CrashSpec>, HarnessError> {
    let pw = point_writes(fault, k)?;
    let n = pw.pending.len();
    let spec = |completed, landing| CrashSpec {
        point: k,
        completed,
        landing,
    };
    let mut out = vec![spec(pw.first, Landing::Durable)];
    for (p, w) in pw.pending.iter().enumerate() {
        if w.fua && p + 1 > pw.first {
            out.push(spec(p + 1, Landing::Durable));
        }
    }
    if let Coverage::Unflushed { random } = coverage {
        if n > pw.first {
            out.push(spec(n, Landing::Completed));
        }
        let mut rng = SplitMix64::new(seed ^ k.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        for i in 0..random {
            if n == pw.first {
                break;
            }
            let j = pw.first + rng.below((n - pw.first + 1) as u64) as usize;
            let s = rng.next_u64() >> 16;
            let landing = match i % 4 {
                0 => Landing::Completed,
                1 => Landing::Subset(s),
                2 => Landing::Shuffled(s),
                // Tear a write in flight, where one big enough is.
                _ if can_tear(&pw, k, j) => Landing::Torn(s),
                _ => Landing::Subset(s),
            };
            out.push(spec(j, landing));
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::dev::BlockDev;

    #[test]
    fn specs_round_trip_through_text() {
        for s in [
            "0.0.durable",
            "12.3.completed",
            "7.2.subset-91",
            "7.9.shuffled-5",
            "3.1.torn-18446744073709551615",
        ] {
            let spec: CrashSpec = s.parse().expect("valid");
            assert_eq!(spec.to_string(), s);
        }
        for bad in ["", "1", "1.2", "x.1.durable", "1.2.sometimes", "1.2.torn-x"] {
            assert!(bad.parse::<CrashSpec>().is_err(), "{bad:?}");
        }
    }

    /// Flush, then: w0 (2 sectors), w1 FUA, w2 (8 sectors), all completed one at a time.
    fn device() -> FaultDev {
        let dev = FaultDev::new_mem(1 << 20).expect("valid size");
        dev.write_at(&[9u8; 512], 0, false).expect("write");
        dev.flush().expect("flush");
        dev.write_at(&[1u8; 1024], 4096, false).expect("write");
        dev.write_at(&[2u8; 512], 8192, true).expect("write");
        dev.write_at(&[3u8; 4096], 12288, false).expect("write");
        dev
    }

    fn kept(fault: &FaultDev, spec: &str) -> (Vec<usize>, Position) {
        let r = resolve(fault, &spec.parse().expect("valid")).expect("resolves");
        let img = fault.crash_image(&r.plan).expect("image");
        (img.kept, r.crash)
    }

    #[test]
    fn durable_keeps_only_fua_writes_completed_by_the_crash() {
        let dev = device();
        assert_eq!(kept(&dev, "1.0.durable").0, Vec::<usize>::new());
        assert_eq!(kept(&dev, "1.1.durable").0, Vec::<usize>::new());
        let (k, crash) = kept(&dev, "1.2.durable");
        assert_eq!(k, vec![1]);
        assert_eq!(
            crash,
            Position {
                flushes: 1,
                writes: 3
            }
        );
        assert_eq!(kept(&dev, "1.3.completed").0, vec![0, 1, 2]);
        assert!(resolve(&dev, &"1.4.durable".parse().expect("valid")).is_err());
    }

    #[test]
    fn subsets_always_keep_completed_fua_writes_and_never_later_ones() {
        let dev = device();
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..200 {
            let (k, _) = kept(&dev, &format!("1.2.subset-{seed}"));
            assert!(
                k.contains(&1),
                "seed {seed}: the completed FUA write landed"
            );
            assert!(k.iter().all(|&p| p <= 2), "seed {seed}: {k:?}");
            seen.insert(k);
        }
        // Write 2 was issued once write 1 completed: in flight at 1.2, so it may land.
        assert!(seen.contains(&vec![0, 1, 2]) && seen.contains(&vec![1]));
    }

    #[test]
    fn torn_tears_the_write_in_flight() {
        let dev = device();
        for seed in 0..50 {
            let r = resolve(&dev, &format!("1.2.torn-{seed}").parse().expect("valid"))
                .expect("resolves");
            let img = dev.crash_image(&r.plan).expect("image");
            let t = img.torn.expect("torn");
            assert_eq!(t.position, 2);
            assert!(!t.landed.is_empty() && t.landed.len() < 8);
        }
        // At 1.3 nothing is in flight any more.
        assert!(resolve(&dev, &"1.3.torn-1".parse().expect("valid")).is_err());
    }

    #[test]
    fn states_cover_the_flush_point_each_fua_point_and_all_pending() {
        let dev = device();
        let durable = states_at(&dev, 1, Coverage::Durable, 7).expect("states");
        assert_eq!(
            durable.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["1.0.durable", "1.2.durable"]
        );
        let all = states_at(&dev, 1, Coverage::Unflushed { random: 40 }, 7).expect("states");
        assert!(all.contains(&"1.3.completed".parse().expect("valid")));
        assert!(all.iter().any(|s| matches!(s.landing, Landing::Torn(_))));
        assert!(
            all.iter()
                .any(|s| matches!(s.landing, Landing::Shuffled(_)))
        );
        for s in &all {
            resolve(&dev, s).expect("every generated state resolves");
        }
        assert_eq!(
            all,
            states_at(&dev, 1, Coverage::Unflushed { random: 40 }, 7).expect("states"),
            "the same seed gives the same states"
        );
    }
}
