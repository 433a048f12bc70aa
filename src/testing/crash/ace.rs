//! Bounded exhaustive workloads in the spirit of CrashMonkey's ACE (Mohan et al., OSDI 2018):
//! most crash-consistency bugs ever reported need three or fewer operations on a fresh
//! filesystem, each ending in a persistence point, so try every such sequence.
//!
//! The file set: directories `A` and `B`, file `A/foo` (8 KiB) and `B/bar` (3000 bytes),
//! made and unmounted once ([`setup_image`]); every sequence starts from a copy of that
//! image. The core alphabet ([`CORE`]) has create, mkdir, write (overwrite, append, past the
//! end), link, unlink, rename (same directory, across directories, over a file, a
//! directory), truncate (down, up) and fallocate (punch, extend, keep-size) on those names.
//! After each core operation comes a persistence operation or none: fsync or fdatasync of
//! a file it touched, fsync of a directory it touched, or sync; the last one must have one.
//! Sequences the model says would fail (unlink of a name already gone, ...) are skipped, as
//! ACE only generates workloads that run.
//!
//! [`AceBounds`] chooses the set: every sequence of length 1 and 2, and of length 3 with the
//! persistence operation only at the end (ACE's own seq-3 sets likewise narrow what persists).
//! A sequence prints as its operations joined by `+`, e.g.
//! `create:A/bar+fsync:A/bar`.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::{Arc, Mutex};

use crate::backend::lab::{Format, LabTarget};
use crate::backend::{Access, FallocMode, OpenFlags, Target};
use crate::fs::dev::{BlockDev, MemDev};
use crate::fs::options::Options;
use crate::testing::crash::model::Model;
use crate::testing::crash::record::Recorder;
use crate::testing::crash::{DEVICE_SIZE, HarnessError, call_err, pattern};

/// One operation of a sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AceOp {
    /// open(O_CREAT) + close.
    Create(&'static str),
    /// mkdir.
    Mkdir(&'static str),
    /// pwrite of `len` bytes at `offset`.
    Write(&'static str, u64, u64),
    /// link(existing, new).
    Link(&'static str, &'static str),
    /// unlink.
    Unlink(&'static str),
    /// rename(from, to).
    Rename(&'static str, &'static str),
    /// truncate to a size.
    Truncate(&'static str, u64),
    /// fallocate(mode, offset, len).
    Falloc(&'static str, FallocMode, u64, u64),
    /// fsync of a file or directory.
    Fsync(&'static str),
    /// fdatasync of a file.
    Fdatasync(&'static str),
    /// sync.
    Sync,
}

/// The core operations (everything but persistence).
pub const CORE: &[AceOp] = &[
    AceOp::Create("A/bar"),
    AceOp::Create("B/foo"),
    AceOp::Mkdir("A/C"),
    AceOp::Write("A/foo", 0, 4096),
    AceOp::Write("A/foo", 8192, 4096),
    AceOp::Write("B/bar", 12000, 1000),
    AceOp::Write("A/bar", 0, 5000),
    AceOp::Link("A/foo", "B/foo"),
    AceOp::Link("A/foo", "A/bar"),
    AceOp::Unlink("A/foo"),
    AceOp::Unlink("B/bar"),
    AceOp::Rename("A/foo", "A/bar"),
    AceOp::Rename("A/foo", "B/foo"),
    AceOp::Rename("B/bar", "A/foo"),
    AceOp::Rename("A/C", "B/C"),
    AceOp::Truncate("A/foo", 2000),
    AceOp::Truncate("B/bar", 20000),
    AceOp::Falloc("A/foo", FallocMode::PunchHole, 0, 4096),
    AceOp::Falloc("B/bar", FallocMode::Allocate, 0, 16384),
    AceOp::Falloc("A/foo", FallocMode::KeepSize, 8192, 16384),
];

/// Every name the operations use, so a parsed token can be matched to a `'static` one.
const NAMES: &[&str] = &[
    "A", "B", "A/foo", "A/bar", "B/foo", "B/bar", "A/C", "B/C", "/",
];

fn falloc_word(m: FallocMode) -> &'static str {
    match m {
        FallocMode::Allocate => "alloc",
        FallocMode::KeepSize => "keep",
        FallocMode::PunchHole => "punch",
        FallocMode::ZeroRange => "zero",
    }
}

impl fmt::Display for AceOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AceOp::Create(p) => write!(f, "create:{p}"),
            AceOp::Mkdir(p) => write!(f, "mkdir:{p}"),
            AceOp::Write(p, o, l) => write!(f, "write:{p}:{o}:{l}"),
            AceOp::Link(a, b) => write!(f, "link:{a}:{b}"),
            AceOp::Unlink(p) => write!(f, "unlink:{p}"),
            AceOp::Rename(a, b) => write!(f, "rename:{a}:{b}"),
            AceOp::Truncate(p, s) => write!(f, "truncate:{p}:{s}"),
            AceOp::Falloc(p, m, o, l) => write!(f, "falloc:{p}:{}:{o}:{l}", falloc_word(*m)),
            AceOp::Fsync(p) => write!(f, "fsync:{p}"),
            AceOp::Fdatasync(p) => write!(f, "fdatasync:{p}"),
            AceOp::Sync => f.write_str("sync"),
        }
    }
}

impl FromStr for AceOp {
    type Err = HarnessError;

    fn from_str(s: &str) -> Result<AceOp, HarnessError> {
        let bad = || HarnessError::BadCase(format!("unknown ACE operation {s:?}"));
        let name = |t: &str| NAMES.iter().copied().find(|n| *n == t).ok_or_else(bad);
        let num = |t: &str| t.parse::<u64>().map_err(|_| bad());
        let parts: Vec<&str> = s.split(':').collect();
        Ok(match parts.as_slice() {
            ["create", p] => AceOp::Create(name(p)?),
            ["mkdir", p] => AceOp::Mkdir(name(p)?),
            ["write", p, o, l] => AceOp::Write(name(p)?, num(o)?, num(l)?),
            ["link", a, b] => AceOp::Link(name(a)?, name(b)?),
            ["unlink", p] => AceOp::Unlink(name(p)?),
            ["rename", a, b] => AceOp::Rename(name(a)?, name(b)?),
            ["truncate", p, n] => AceOp::Truncate(name(p)?, num(n)?),
            ["falloc", p, m, o, l] => {
                let mode = [
                    FallocMode::Allocate,
                    FallocMode::KeepSize,
                    FallocMode::PunchHole,
                    FallocMode::ZeroRange,
                ]
                .into_iter()
                .find(|&x| falloc_word(x) == *m)
                .ok_or_else(bad)?;
                AceOp::Falloc(name(p)?, mode, num(o)?, num(l)?)
            }
            ["fsync", p] => AceOp::Fsync(name(p)?),
            ["fdatasync", p] => AceOp::Fdatasync(name(p)?),
            ["sync"] => AceOp::Sync,
            _ => return Err(bad()),
        })
    }
}

fn abs(p: &str) -> PathBuf {
    PathBuf::from(format!("/{}", p.trim_start_matches('/')))
}

fn parent(p: &'static str) -> &'static str {
    p.rfind('/').map_or("/", |i| &p[..i])
}

impl AceOp {
    /// Whether this is a persistence operation.
    pub fn persists(&self) -> bool {
        matches!(self, AceOp::Fsync(_) | AceOp::Fdatasync(_) | AceOp::Sync)
    }

    /// The persistence operations that may follow this core operation: fsync of each object
    /// it touched that still exists, fdatasync of each such file, and sync.
    fn persistence(&self) -> Vec<AceOp> {
        let (files, dirs): (Vec<&'static str>, Vec<&'static str>) = match *self {
            AceOp::Create(p) => (vec![p], vec![parent(p)]),
            AceOp::Mkdir(p) => (vec![], vec![p, parent(p)]),
            AceOp::Write(p, ..) | AceOp::Truncate(p, _) | AceOp::Falloc(p, ..) => (vec![p], vec![]),
            AceOp::Link(_, b) => (vec![b], vec![parent(b)]),
            AceOp::Unlink(p) => (vec![], vec![parent(p)]),
            AceOp::Rename(a, b) if CORE.contains(&AceOp::Mkdir(a)) => {
                (vec![], vec![b, parent(a), parent(b)])
            }
            AceOp::Rename(a, b) => (vec![b], vec![parent(a), parent(b)]),
            AceOp::Fsync(_) | AceOp::Fdatasync(_) | AceOp::Sync => (vec![], vec![]),
        };
        let mut out = Vec::new();
        for f in files {
            out.push(AceOp::Fsync(f));
            out.push(AceOp::Fdatasync(f));
        }
        for d in dirs {
            if !out.contains(&AceOp::Fsync(d)) {
                out.push(AceOp::Fsync(d));
            }
        }
        out.push(AceOp::Sync);
        out
    }

    /// Apply to the model; an error means the operation would fail.
    fn predict(&self, m: &mut Model) -> Result<(), HarnessError> {
        let fail = |e| HarnessError::BadCase(format!("{self} would fail: {e}"));
        let path = |p: &str| abs(p).into_os_string().into_encoded_bytes();
        match *self {
            AceOp::Create(p) => m.create(&path(p), false, None).map(drop),
            AceOp::Mkdir(p) => m.mkdir(&path(p), None).map(drop),
            AceOp::Write(p, o, l) => m
                .resolve(&path(p))
                .and_then(|i| m.write(i, o, &vec![1; l as usize]))
                .map(drop),
            AceOp::Link(a, b) => m.link(&path(a), &path(b)).map(drop),
            AceOp::Unlink(p) => m.unlink(&path(p)).map(drop),
            AceOp::Rename(a, b) => m.rename(&path(a), &path(b)).map(drop),
            AceOp::Truncate(p, s) => m.resolve(&path(p)).and_then(|i| m.truncate(i, s)).map(drop),
            AceOp::Falloc(p, mode, o, l) => m
                .resolve(&path(p))
                .and_then(|i| m.fallocate(i, mode, o, l))
                .map(drop),
            AceOp::Fsync(p) => m.resolve(&path(p)).map(drop),
            AceOp::Fdatasync(p) => m
                .resolve(&path(p))
                .and_then(|i| m.content(i).map(drop).ok_or(nix::errno::Errno::EISDIR)),
            AceOp::Sync => Ok(()),
        }
        .map_err(fail)
    }

    /// Run through the recorder. `index` numbers the operation (it seeds written bytes).
    fn run(&self, rec: &Recorder, index: u64) -> Result<(), HarnessError> {
        let what = self.to_string();
        let rw = OpenFlags {
            access: Access::ReadWrite,
            ..OpenFlags::default()
        };
        match *self {
            AceOp::Create(p) => {
                let flags = OpenFlags { create: true, ..rw };
                let fd = rec.open(&abs(p), flags, 0o644).map_err(call_err(&what))?;
                rec.close(fd).map_err(call_err(&what))?;
            }
            AceOp::Mkdir(p) => rec.mkdir(&abs(p), 0o755).map_err(call_err(&what))?,
            AceOp::Write(p, o, l) => {
                let fd = rec.open(&abs(p), rw, 0).map_err(call_err(&what))?;
                rec.pwrite(fd, &pattern(index + 10, o, l as usize), o)
                    .map_err(call_err(&what))?;
                rec.close(fd).map_err(call_err(&what))?;
            }
            AceOp::Link(a, b) => rec.link(&abs(a), &abs(b)).map_err(call_err(&what))?,
            AceOp::Unlink(p) => rec.unlink(&abs(p)).map_err(call_err(&what))?,
            AceOp::Rename(a, b) => rec.rename(&abs(a), &abs(b)).map_err(call_err(&what))?,
            AceOp::Truncate(p, s) => rec.truncate(&abs(p), s).map_err(call_err(&what))?,
            AceOp::Falloc(p, mode, o, l) => {
                let fd = rec.open(&abs(p), rw, 0).map_err(call_err(&what))?;
                rec.fallocate(fd, mode, o, l).map_err(call_err(&what))?;
                rec.close(fd).map_err(call_err(&what))?;
            }
            AceOp::Fsync(p) | AceOp::Fdatasync(p) => {
                let fd = rec
                    .open(&abs(p), OpenFlags::read_only(), 0)
                    .map_err(call_err(&what))?;
                match self {
                    AceOp::Fsync(_) => rec.fsync(fd),
                    _ => rec.fdatasync(fd),
                }
                .map_err(call_err(&what))?;
                rec.close(fd).map_err(call_err(&what))?;
            }
            AceOp::Sync => rec.sync().map_err(call_err(&what))?,
        }
        Ok(())
    }
}

/// One ACE sequence: core operations, each followed by at most one persistence operation,
/// the last by exactly one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AceSeq(pub Vec<AceOp>);

impl fmt::Display for AceSeq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, op) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("+")?;
            }
            write!(f, "{op}")?;
        }
        Ok(())
    }
}

impl FromStr for AceSeq {
    type Err = HarnessError;

    fn from_str(s: &str) -> Result<AceSeq, HarnessError> {
        let ops = s
            .split('+')
            .map(str::parse)
            .collect::<Result<Vec<AceOp>, _>>()?;
        if ops.last().is_none_or(|op| !op.persists()) {
            return Err(HarnessError::BadCase(format!(
                "ACE sequence {s:?} must end in fsync, fdatasync or sync"
            )));
        }
        Ok(AceSeq(ops))
    }
}

impl AceSeq {
    /// Whether every operation would succeed from the set-up state.
    pub fn is_valid(&self, start: &Model) -> bool {
        let mut m = start.clone();
        self.0.iter().all(|op| op.predict(&mut m).is_ok())
    }

    /// Run the sequence.
    pub fn run(&self, rec: &Recorder) -> Result<(), HarnessError> {
        for (i, op) in self.0.iter().enumerate() {
            op.run(rec, i as u64)?;
        }
        Ok(())
    }
}

/// Which sequences to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AceBounds {
    /// Longest sequence, in core operations (1..=3).
    pub max_core: usize,
    /// Longest sequence that may persist after every core operation; longer ones persist
    /// only at the end.
    pub persist_between_up_to: usize,
}

impl Default for AceBounds {
    fn default() -> Self {
        AceBounds {
            max_core: 3,
            persist_between_up_to: 2,
        }
    }
}

/// Every valid sequence within the bounds, shortest first, in a fixed order.
pub fn sequences(bounds: AceBounds, start: &Model) -> Vec<AceSeq> {
    let mut out = Vec::new();
    for len in 1..=bounds.max_core.min(3) {
        let between = len <= bounds.persist_between_up_to;
        let mut prefix = Vec::new();
        extend(&mut out, &mut prefix, len, between, start);
    }
    out
}

/// Depth-first: append every valid (core, persistence) pair, pruning on the model.
fn extend(out: &mut Vec<AceSeq>, prefix: &mut Vec<AceOp>, left: usize, between: bool, m: &Model) {
    for core in CORE {
        let mut after_core = m.clone();
        if core.predict(&mut after_core).is_err() {
            continue;
        }
        let mut choices: Vec<Option<AceOp>> = Vec::new();
        if left > 1 {
            choices.push(None);
            if between {
                choices.extend(core.persistence().into_iter().map(Some));
            }
        } else {
            choices.extend(core.persistence().into_iter().map(Some));
        }
        for p in choices {
            let mut next = after_core.clone();
            if let Some(p) = p
                && p.predict(&mut next).is_err()
            {
                continue;
            }
            let mark = prefix.len();
            prefix.push(*core);
            prefix.extend(p);
            if left == 1 {
                out.push(AceSeq(prefix.clone()));
            } else {
                extend(out, prefix, left - 1, between, &next);
            }
            prefix.truncate(mark);
        }
    }
}

/// Set-up images already made, by options.
static SETUP: Mutex<Vec<(Options, Arc<MemDev>)>> = Mutex::new(Vec::new());

/// The set-up image every sequence starts from (made once per options).
pub fn setup_image(options: &Options) -> Result<Arc<MemDev>, HarnessError> {
    let mut cache = SETUP
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, img)) = cache.iter().find(|(o, _)| o == options) {
        return Ok(Arc::clone(img));
    }
    let mem = Arc::new(MemDev::new(DEVICE_SIZE)?);
    let lab = LabTarget::new(
        Arc::clone(&mem) as Arc<dyn BlockDev>,
        options,
        Format::Always,
    )
    .map_err(HarnessError::Mount)?;
    let made = |what: &str| call_err(format!("set-up {what}"));
    lab.mkdir(&abs("A"), 0o755).map_err(made("mkdir A"))?;
    lab.mkdir(&abs("B"), 0o755).map_err(made("mkdir B"))?;
    for (p, len, op) in [("A/foo", 8192, 1), ("B/bar", 3000, 2)] {
        let flags = OpenFlags {
            access: Access::ReadWrite,
            create: true,
            ..OpenFlags::default()
        };
        let fd = lab.open(&abs(p), flags, 0o644).map_err(made(p))?;
        lab.pwrite(fd, &pattern(op, 0, len), 0).map_err(made(p))?;
        lab.close(fd).map_err(made(p))?;
    }
    lab.unmount().map_err(made("unmount"))?;
    drop(lab);
    cache.push((options.clone(), Arc::clone(&mem)));
    Ok(mem)
}

/// The model of the set-up state (for [`sequences`]).
pub fn setup_model(options: &Options) -> Result<Model, HarnessError> {
    let rec = Recorder::resume(&*setup_image(options)?, options)?;
    Ok(rec.with_model(Model::clone))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start() -> Model {
        let mut m = Model::new(1);
        m.mkdir(b"/A", None).expect("mkdir");
        m.mkdir(b"/B", None).expect("mkdir");
        let (foo, _) = m.create(b"/A/foo", false, None).expect("create");
        m.write(foo, 0, &[1; 8192]).expect("write");
        let (bar, _) = m.create(b"/B/bar", false, None).expect("create");
        m.write(bar, 0, &[2; 3000]).expect("write");
        m
    }

    #[test]
    fn sequences_round_trip_through_text() {
        for s in [
            "create:A/bar+fsync:A/bar",
            "rename:A/foo:B/foo+write:B/bar:12000:1000+fsync:B",
            "falloc:A/foo:punch:0:4096+sync",
            "mkdir:A/C+rename:A/C:B/C+fsync:B/C",
        ] {
            let seq: AceSeq = s.parse().expect("valid");
            assert_eq!(seq.to_string(), s);
        }
        for bad in [
            "create:A/bar",
            "create:Q+sync",
            "explode:A+sync",
            "write:A/foo:x:1+sync",
        ] {
            assert!(bad.parse::<AceSeq>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn every_generated_sequence_is_valid_ends_in_persistence_and_is_unique() {
        let m = start();
        let bounds = AceBounds {
            max_core: 2,
            persist_between_up_to: 2,
        };
        let all = sequences(bounds, &m);
        let unique: std::collections::HashSet<String> =
            all.iter().map(ToString::to_string).collect();
        assert_eq!(unique.len(), all.len());
        for s in &all {
            assert!(s.is_valid(&m), "{s}");
            assert!(s.0.last().is_some_and(AceOp::persists), "{s}");
        }
        // Every core operation valid at the start appears alone with each of its persistence
        // choices.
        let singles = all.iter().filter(|s| s.0.len() == 2).count();
        let expected: usize = CORE
            .iter()
            .filter(|c| c.predict(&mut m.clone()).is_ok())
            .map(|c| c.persistence().len())
            .sum();
        assert_eq!(singles, expected);
        assert!(
            !all.iter()
                .any(|s| s.to_string().starts_with("unlink:A/foo+unlink:A/foo"))
        );
        assert!(
            all.iter()
                .any(|s| s.to_string() == "mkdir:A/C+rename:A/C:B/C+fsync:B/C")
        );
    }
}
