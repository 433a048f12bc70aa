//! How far a running fs_mark iteration is: each worker's phase and step count, written by
//! the workers without contention and read by a progress display as one snapshot.

use std::sync::atomic::{AtomicU64, Ordering};

use super::config::Config;

/// The part of an iteration a worker is in, in the order it goes through them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Phase {
    /// The write loop: create, write, (fsync,) close each file.
    Creating = 0,
    /// The post-loop sync phases (`-S 2..7`): sync(), syncfs(), reopen-and-fsync passes.
    Syncing = 1,
    /// The unlink pass.
    Unlinking = 2,
    /// Finished.
    Done = 3,
}

impl Phase {
    /// The phase in a word, for a progress display.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Creating => "creating",
            Phase::Syncing => "syncing",
            Phase::Unlinking => "unlinking",
            Phase::Done => "done",
        }
    }

    fn from_u8(v: u8) -> Phase {
        match v {
            0 => Phase::Creating,
            1 => Phase::Syncing,
            2 => Phase::Unlinking,
            _ => Phase::Done,
        }
    }
}

/// How far the running iteration is: each worker's phase and the steps it has done in it.
#[derive(Debug)]
pub struct Progress {
    slots: Vec<WorkerProgress>,
    /// Steps one worker takes in each phase (indexed by `Phase as usize`, `Done` excluded).
    steps: [u64; 3],
}

/// One worker's phase and step count, on its own cache line so workers never contend.
///
/// Both live in one word (the phase in the top byte, the count below it), so moving to the
/// next phase and zeroing the count is one store: a reader never sees the new phase's count
/// under the old phase's name, which made the bar's count jump back for a poll.
#[derive(Debug, Default)]
#[repr(align(64))]
pub(crate) struct WorkerProgress {
    word: AtomicU64,
}

/// Where the phase sits in a [`WorkerProgress`] word.
const PHASE_SHIFT: u32 = 56;

impl WorkerProgress {
    /// The worker moves on to `phase`, with no step of it done yet.
    pub(crate) fn enter(&self, phase: Phase) {
        self.word
            .store(u64::from(phase as u8) << PHASE_SHIFT, Ordering::Release);
    }

    /// The worker did one more step (a file) of its phase. A phase has at most a few million
    /// steps (`-n` is at most 1,000,000 and a phase passes over each file at most twice), far
    /// below the 2^56 that would carry into the phase byte.
    pub(crate) fn step(&self) {
        self.word.fetch_add(1, Ordering::Release);
    }

    /// The worker's phase and its steps done in it, read together.
    fn read(&self) -> (Phase, u64) {
        let w = self.word.load(Ordering::Acquire);
        let phase = u8::try_from(w >> PHASE_SHIFT).map_or(Phase::Done, Phase::from_u8);
        (phase, w & ((1 << PHASE_SHIFT) - 1))
    }
}

/// A snapshot of an iteration's progress, as the slowest worker sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhaseProgress {
    /// The earliest phase any worker is still in.
    pub phase: Phase,
    /// Steps done in that phase, all workers (a worker past it counts all of its steps).
    pub done: u64,
    /// Steps the phase has, all workers (0 when it is not counted in steps, e.g. a sync()).
    pub total: u64,
}

impl Progress {
    pub(crate) fn new(workers: usize, config: &Config) -> Progress {
        let n = u64::from(config.num_files);
        let p = config.sync.phases();
        let reopens =
            n * (u64::from(p.post_in_order) + u64::from(p.post_reverse)) + u64::from(p.first_file);
        Progress {
            slots: (0..workers).map(|_| WorkerProgress::default()).collect(),
            steps: [n, reopens, if config.keep_files { 0 } else { n }],
        }
    }

    /// Worker `slot`'s counters.
    pub(crate) fn slot(&self, slot: usize) -> &WorkerProgress {
        &self.slots[slot]
    }

    /// Where the iteration is.
    pub fn snapshot(&self) -> PhaseProgress {
        let phases: Vec<(Phase, u64)> = self.slots.iter().map(WorkerProgress::read).collect();
        let phase = phases.iter().map(|&(p, _)| p).min().unwrap_or(Phase::Done);
        let per_worker = self.steps.get(phase as usize).copied().unwrap_or(0);
        let done = phases
            .iter()
            .map(|&(p, d)| if p > phase { per_worker } else { d })
            .sum();
        PhaseProgress {
            phase,
            done,
            total: per_worker * self.slots.len() as u64,
        }
    }

    /// Files created so far in the iteration, all workers.
    pub fn files_done(&self) -> u64 {
        let created = self.steps[0];
        self.slots
            .iter()
            .map(|s| match s.read() {
                (Phase::Creating, done) => done,
                _ => created,
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_follows_the_slowest_worker_through_the_phases() {
        let mut c = Config::new("/d");
        c.num_files = 10;
        c.threads = 2;
        c.sync = crate::workload::fsmark::SyncMethod::PostReverse;
        let p = Progress::new(2, &c);
        let snap = |phase, done, total| PhaseProgress { phase, done, total };
        assert_eq!(p.snapshot(), snap(Phase::Creating, 0, 20));
        for _ in 0..4 {
            p.slots[0].step();
        }
        assert_eq!(p.snapshot(), snap(Phase::Creating, 4, 20));
        assert_eq!(p.files_done(), 4);
        // Worker 0 moves on: it counts as all of its creates while worker 1 still creates.
        p.slots[0].enter(Phase::Syncing);
        p.slots[1].step();
        assert_eq!(p.snapshot(), snap(Phase::Creating, 11, 20));
        p.slots[1].enter(Phase::Syncing);
        p.slots[1].step();
        assert_eq!(
            p.snapshot(),
            snap(Phase::Syncing, 1, 20),
            "one reverse pass each"
        );
        assert_eq!(p.files_done(), 20);
        p.slots[0].enter(Phase::Unlinking);
        p.slots[1].enter(Phase::Unlinking);
        p.slots[0].step();
        assert_eq!(p.snapshot(), snap(Phase::Unlinking, 1, 20));
        p.slots[0].enter(Phase::Done);
        p.slots[1].enter(Phase::Done);
        assert_eq!(p.snapshot().phase, Phase::Done);
    }
}
