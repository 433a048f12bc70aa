//! The crash oracle: is a recovered image a state the filesystem was allowed to crash into?
//!
//! The rules are XFS's, stated over the recorded [`History`]:
//!
//! - **Metadata is strictly ordered** (SOMC; every XFS metadata change goes through one
//!   ordered log, and recovery replays a prefix of it). So the image's namespace (every
//!   directory entry: which inode it names, and that inode's kind) must equal the model's
//!   namespace after some prefix of the operations, `P` of them.
//! - `P` is at least what was acknowledged: an fsync or fdatasync of a file or directory that
//!   returned before the crash covers every operation that changed an entry naming it or
//!   inside it (fdatasync skips only timestamp updates, and no namespace change is only
//!   that); a sync, syncfs or unmount covers every operation before it.
//! - `P` is at most the operations that had started by the crash: nothing later can be in
//!   the image.
//! - **Data is not ordered** with metadata or with itself (pages are written back in any
//!   order, extents are converted at I/O completion). A file's bytes must be what its last
//!   acknowledged fsync (or sync) left, except where an operation after it, started before
//!   the crash, may have changed them: a write's bytes, or zero where a truncate cut, a hole
//!   was punched, or the file grew. Past the promised size, and anywhere in a file never made
//!   durable, a byte is zero or something written there; nothing else (stale blocks of another
//!   file are a failure). The size lies between the smallest and largest size the file had
//!   from the promise to the crash.
//!
//! The crash itself is a device [`Position`]: everything acknowledged by then is owed, and
//! nothing issued after it can be there. [`judge`] returns every [`Finding`]; none means the
//! image passes.

use std::collections::{HashMap, HashSet};
use std::fmt;

use crate::backend::FileKind;
use crate::fs::dev::fault::Position;
use crate::fs::error::FsError;
use crate::testing::crash::image::{Actual, FileImage};
use crate::testing::crash::model::{DataChange, Ino, Kind, Model};
use crate::testing::crash::record::{History, Persist, Step};

/// Most differing entries a namespace finding lists.
const MAX_LISTED: usize = 8;

/// Lookups over a history, built once and shared by every crash image checked against it.
#[derive(Debug, Default)]
pub struct Index {
    /// Steps whose entry changes involve an inode (as the directory or the inode named).
    entry_steps: HashMap<Ino, Vec<usize>>,
    /// Steps that changed an inode's bytes.
    data_steps: HashMap<Ino, Vec<usize>>,
    /// Steps that created an inode (an inode number can be reused).
    births: HashMap<Ino, Vec<usize>>,
    /// Steps that promised durability.
    persists: Vec<usize>,
}

impl Index {
    /// Index a history.
    pub fn new(history: &History) -> Index {
        let mut ix = Index::default();
        for (s, step) in history.steps.iter().enumerate() {
            let mut involved = HashSet::new();
            for e in &step.change.entries {
                involved.extend([Some(e.dir), e.before, e.after].into_iter().flatten());
            }
            for ino in involved {
                ix.entry_steps.entry(ino).or_default().push(s);
            }
            let mut written = HashSet::new();
            for (ino, _) in &step.change.data {
                if written.insert(*ino) {
                    ix.data_steps.entry(*ino).or_default().push(s);
                }
            }
            if let Some((ino, _)) = step.change.born {
                ix.births.entry(ino).or_default().push(s);
            }
            if step.persist.is_some() {
                ix.persists.push(s);
            }
        }
        ix
    }
}

/// Something wrong with a crash image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// The image does not mount (recovery failed or the superblock is unreadable).
    Mount(FsError),
    /// The full checker found violations.
    Fsck(Vec<crate::fs::check::Finding>),
    /// Walking or reading the tree failed.
    Read(FsError),
    /// The namespace is an earlier state than an acknowledged operation allows.
    LostAck {
        /// The acknowledged operation (step number and call).
        promise: String,
        /// The operations the image must hold.
        needed: usize,
        /// The last prefix the image's namespace matches.
        holds: usize,
        /// The first operation the image lacks.
        missing: String,
    },
    /// The namespace matches no prefix of the operations that had started.
    Namespace {
        /// The closest prefix allowed.
        closest: usize,
        /// Entries that differ from it.
        differences: Vec<String>,
        /// How many entries differ in all.
        count: usize,
    },
    /// An entry names an inode of the wrong kind.
    Kind {
        /// The entry.
        path: String,
        /// The kind found.
        found: FileKind,
        /// The model's kind.
        expected: Kind,
    },
    /// A file's size is outside what its history allows.
    Size {
        /// The file.
        path: String,
        /// The size found.
        found: u64,
        /// The smallest size allowed.
        min: u64,
        /// The largest size allowed.
        max: u64,
        /// What was promised, if anything.
        promise: String,
    },
    /// A file's bytes are not what its history allows.
    Data {
        /// The file.
        path: String,
        /// The first bad byte.
        offset: u64,
        /// Its value.
        found: u8,
        /// The value promised there, if a promise covers it.
        promised: Option<u8>,
        /// Bad bytes in the file.
        bad: u64,
        /// What was promised, if anything.
        promise: String,
    },
    /// An entry names an inode the model never had (only possible if the history is
    /// inconsistent with the namespace check that matched it).
    Untracked {
        /// The entry.
        path: String,
        /// The inode.
        ino: Ino,
    },
    /// Reading a file returned fewer bytes than its size.
    ShortRead {
        /// The file.
        path: String,
        /// Its size.
        size: u64,
        /// Bytes read.
        read: u64,
    },
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Finding::Mount(e) => write!(f, "the image does not mount: {e}"),
            Finding::Fsck(v) => {
                let all: Vec<String> = v.iter().map(ToString::to_string).collect();
                write!(f, "fsck: {}", all.join("; "))
            }
            Finding::Read(e) => write!(f, "reading the tree failed: {e}"),
            Finding::LostAck {
                promise,
                needed,
                holds,
                missing,
            } => write!(
                f,
                "acknowledged {promise} is lost: it needs the first {needed} operations, the \
                 namespace holds only {holds} (missing {missing})"
            ),
            Finding::Namespace {
                closest,
                differences,
                count,
            } => write!(
                f,
                "the namespace matches no allowed prefix of the operations; {count} entries \
                 differ from the closest (the first {closest} operations): {}",
                differences.join(", ")
            ),
            Finding::Kind {
                path,
                found,
                expected,
            } => write!(f, "{path} is a {found:?}, the model has a {expected:?}"),
            Finding::Size {
                path,
                found,
                min,
                max,
                promise,
            } => write!(
                f,
                "{path} has size {found}, allowed {min}..={max} ({promise})"
            ),
            Finding::Data {
                path,
                offset,
                found,
                promised,
                bad,
                promise,
            } => {
                write!(f, "{path}: byte {offset} is {found:#04x}")?;
                if let Some(p) = promised {
                    write!(f, ", promised {p:#04x}")?;
                }
                write!(
                    f,
                    ", and no later operation leaves that there ({bad} bad bytes; {promise})"
                )
            }
            Finding::Untracked { path, ino } => {
                write!(f, "{path} names inode {ino}, which no operation made")
            }
            Finding::ShortRead { path, size, read } => {
                write!(f, "{path}: size {size} but a read returned {read} bytes")
            }
        }
    }
}

/// A step as findings name it: "step 12 (fsync /A/foo)".
fn step_name(steps: &[Step], s: usize) -> String {
    steps.get(s).map_or_else(
        || format!("step {s}"),
        |st| format!("step {s} ({})", st.call),
    )
}

/// The namespace after some prefix of the steps, as entry -> inode.
type Entries = HashMap<(Ino, Vec<u8>), Ino>;

fn initial_entries(model: &Model) -> Entries {
    model
        .entries()
        .map(|((d, n), i)| ((d, n.to_vec()), i))
        .collect()
}

/// Paths of directories in a namespace, for messages.
fn dir_paths(
    root: Ino,
    entries: impl Iterator<Item = ((Ino, Vec<u8>), Ino)>,
) -> HashMap<Ino, String> {
    let mut up: HashMap<Ino, (Ino, Vec<u8>)> = HashMap::new();
    for ((dir, name), ino) in entries {
        up.entry(ino).or_insert((dir, name));
    }
    let mut out = HashMap::new();
    fn path(ino: Ino, root: Ino, up: &HashMap<Ino, (Ino, Vec<u8>)>, depth: usize) -> String {
        if ino == root {
            return String::new();
        }
        match up.get(&ino) {
            Some((dir, name)) if depth < 64 => format!(
                "{}/{}",
                path(*dir, root, up, depth + 1),
                String::from_utf8_lossy(name)
            ),
            _ => format!("<ino {ino}>"),
        }
    }
    for &ino in up.keys() {
        out.insert(ino, path(ino, root, &up, 0));
    }
    out
}

/// The path of entry `(dir, name)` given directory paths.
fn entry_path(paths: &HashMap<Ino, String>, root: Ino, dir: Ino, name: &[u8]) -> String {
    let base = if dir == root {
        String::new()
    } else {
        paths
            .get(&dir)
            .cloned()
            .unwrap_or_else(|| format!("<ino {dir}>"))
    };
    format!("{base}/{}", String::from_utf8_lossy(name))
}

/// What the crash owes: the prefix bounds and the promise that sets the lower one.
struct Bounds {
    /// At least this many steps must be in the namespace.
    min: usize,
    /// The promise that requires `min` (a step index), if any.
    by: Option<usize>,
    /// At most this many steps can be (those started by the crash).
    max: usize,
}

fn bounds(history: &History, index: &Index, crash: Position) -> Bounds {
    let steps = &history.steps;
    let max = steps
        .iter()
        .take_while(|s| s.started.reached_by(crash))
        .count();
    let mut b = Bounds {
        min: 0,
        by: None,
        max,
    };
    for &s in &index.persists {
        let step = &steps[s];
        if s >= max || !step.acked.reached_by(crash) {
            continue;
        }
        let need = match step.persist {
            Some(Persist::Fsync { ino, .. }) => index
                .entry_steps
                .get(&ino)
                .and_then(|v| v.iter().rev().find(|&&e| e <= s))
                .map_or(0, |&e| e + 1),
            Some(Persist::Sync) => s + 1,
            None => 0,
        };
        if need > b.min {
            b.min = need;
            b.by = Some(s);
        }
    }
    b
}

/// Check a crash image's tree against the history for a crash at `crash`.
pub fn judge(history: &History, index: &Index, crash: Position, actual: &Actual) -> Vec<Finding> {
    let steps = &history.steps;
    let b = bounds(history, index, crash);
    let key_ino = |k: &(Ino, Vec<u8>)| actual.entries.get(k).map(|&(i, _)| i);

    // Walk the prefixes 0..=max, counting entries that differ from the image.
    let mut cur = initial_entries(&history.initial);
    let mut differing: usize = cur.iter().filter(|(k, v)| key_ino(k) != Some(**v)).count()
        + actual
            .entries
            .keys()
            .filter(|k| !cur.contains_key(*k))
            .count();
    let mut matches = Vec::new();
    let mut closest = (usize::MAX, b.min);
    for (p, next) in steps[..b.max].iter().map(Some).chain([None]).enumerate() {
        if differing == 0 {
            matches.push(p);
        }
        if p >= b.min && differing < closest.0 {
            closest = (differing, p);
        }
        let Some(step) = next else { break };
        for e in &step.change.entries {
            let k = (e.dir, e.name.clone());
            let was = cur.get(&k).copied() == key_ino(&k);
            match e.after {
                Some(ino) => cur.insert(k.clone(), ino),
                None => cur.remove(&k),
            };
            let is = cur.get(&k).copied() == key_ino(&k);
            match (was, is) {
                (true, false) => differing += 1,
                (false, true) => differing -= 1,
                _ => {}
            }
        }
    }

    let Some(&p) = matches.iter().rev().find(|&&p| p >= b.min) else {
        return vec![namespace_finding(history, b, &matches, closest.1, actual)];
    };

    let mut findings = Vec::new();
    let entries_at_p = prefix_entries(history, p);
    let paths = dir_paths(actual.root, entries_at_p.clone().into_iter());
    let mut path_of_file: HashMap<Ino, String> = HashMap::new();
    for ((dir, name), &(ino, kind)) in &actual.entries {
        let path = entry_path(&paths, actual.root, *dir, name);
        let expected = kind_at(history, index, ino, p);
        match expected {
            Some(k) if k.file_kind() == kind => {}
            Some(k) => findings.push(Finding::Kind {
                path: path.clone(),
                found: kind,
                expected: k,
            }),
            // The namespace check matched this entry, so the model has the inode unless the
            // history is inconsistent; say so rather than skip it.
            None => findings.push(Finding::Untracked {
                path: path.clone(),
                ino,
            }),
        }
        if kind == FileKind::File {
            path_of_file
                .entry(ino)
                .and_modify(|p| {
                    if path < *p {
                        *p = path.clone();
                    }
                })
                .or_insert(path);
        }
    }
    let mut files: Vec<(&Ino, &FileImage)> = actual.files.iter().collect();
    files.sort_by_key(|(i, _)| **i);
    for (&ino, image) in files {
        let path = path_of_file
            .get(&ino)
            .cloned()
            .unwrap_or_else(|| format!("<ino {ino}>"));
        check_file(
            history,
            index,
            crash,
            b.max,
            p,
            ino,
            &path,
            image,
            &mut findings,
        );
    }
    findings
}

/// The namespace after the first `p` steps.
fn prefix_entries(history: &History, p: usize) -> Entries {
    let mut cur = initial_entries(&history.initial);
    for step in &history.steps[..p] {
        for e in &step.change.entries {
            let k = (e.dir, e.name.clone());
            match e.after {
                Some(ino) => cur.insert(k, ino),
                None => cur.remove(&k),
            };
        }
    }
    cur
}

fn namespace_finding(
    history: &History,
    b: Bounds,
    matches: &[usize],
    closest: usize,
    actual: &Actual,
) -> Finding {
    let steps = &history.steps;
    if let (Some(&holds), Some(by)) = (matches.last(), b.by) {
        // The image is an allowed state of an earlier moment: an acknowledged promise broke.
        return Finding::LostAck {
            promise: step_name(steps, by),
            needed: b.min,
            holds,
            missing: step_name(steps, holds),
        };
    }
    let model = prefix_entries(history, closest);
    let mut paths = dir_paths(actual.root, model.clone().into_iter());
    for (k, v) in dir_paths(
        actual.root,
        actual.entries.iter().map(|(k, &(i, _))| (k.clone(), i)),
    ) {
        paths.entry(k).or_insert(v);
    }
    let mut differences = Vec::new();
    let mut keys: Vec<&(Ino, Vec<u8>)> = model.keys().chain(actual.entries.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut count = 0;
    for k in keys {
        let want = model.get(k).copied();
        let got = actual.entries.get(k).map(|&(i, _)| i);
        if want == got {
            continue;
        }
        count += 1;
        if differences.len() < MAX_LISTED {
            let show = |v: Option<Ino>| v.map_or("absent".to_string(), |i| format!("ino {i}"));
            differences.push(format!(
                "{}: expected {}, found {}",
                entry_path(&paths, actual.root, k.0, &k.1),
                show(want),
                show(got)
            ));
        }
    }
    Finding::Namespace {
        closest,
        differences,
        count,
    }
}

/// The birth step of the incarnation of `ino` live after the first `p` steps (`None`: the
/// inode was there from the start), or no incarnation at all.
fn incarnation(history: &History, index: &Index, ino: Ino, p: usize) -> Option<Option<usize>> {
    match index
        .births
        .get(&ino)
        .and_then(|v| v.iter().rev().find(|&&s| s < p))
    {
        Some(&s) => Some(Some(s)),
        None => history.initial.node(ino).map(|_| None),
    }
}

fn kind_at(history: &History, index: &Index, ino: Ino, p: usize) -> Option<Kind> {
    match incarnation(history, index, ino, p)? {
        Some(s) => history.steps[s].change.born.map(|(_, k)| k),
        None => history.initial.node(ino).map(|n| n.kind),
    }
}

/// Check one file's size and bytes.
#[allow(
    clippy::too_many_arguments,
    reason = "one call site; the parts are distinct"
)]
fn check_file(
    history: &History,
    index: &Index,
    crash: Position,
    started: usize,
    p: usize,
    ino: Ino,
    path: &str,
    image: &FileImage,
    findings: &mut Vec<Finding>,
) {
    let steps = &history.steps;
    let Some(birth) = incarnation(history, index, ino, p) else {
        // Reported as untracked by the entry check.
        return;
    };
    let first = birth.unwrap_or(0);
    // Changes of this incarnation end where the inode number is born again.
    let end = index
        .births
        .get(&ino)
        .and_then(|v| v.iter().find(|&&s| birth.is_none_or(|b| s > b)))
        .map_or(started, |&s| s.min(started));
    // The last promise covering the file: its own fsync, or a sync, acknowledged by the crash.
    let promise = index
        .persists
        .iter()
        .rev()
        .copied()
        .filter(|&s| s >= first && s < end && steps[s].acked.reached_by(crash))
        .find(|&s| match steps[s].persist {
            Some(Persist::Fsync { ino: f, .. }) => f == ino,
            Some(Persist::Sync) => true,
            None => false,
        });
    let changes: Vec<(usize, &DataChange)> = index
        .data_steps
        .get(&ino)
        .map(|v| {
            v.iter()
                .copied()
                .filter(|&s| s >= first && s < end)
                .flat_map(|s| {
                    steps[s]
                        .change
                        .data
                        .iter()
                        .filter(move |(i, _)| *i == ino)
                        .map(move |(_, c)| (s, c))
                })
                .collect()
        })
        .unwrap_or_default();
    // What is owed: the bytes as of the promise (the starting bytes, for a file that was
    // there from the start and not touched since).
    let promised: Option<Vec<u8>> = match (promise, birth) {
        (None, Some(_)) => None,
        (q, _) => {
            let mut data = match birth {
                None => history
                    .initial
                    .content(ino)
                    .map(<[u8]>::to_vec)
                    .unwrap_or_default(),
                Some(_) => Vec::new(),
            };
            for (s, c) in &changes {
                if q.is_some_and(|q| *s <= q) {
                    c.apply(&mut data);
                }
            }
            Some(data)
        }
    };
    let promise_text = match promise {
        Some(q) => format!("promised by {}", step_name(steps, q)),
        None if birth.is_none() => "there from the start".to_string(),
        None => "never made durable".to_string(),
    };
    let later: Vec<&DataChange> = changes
        .iter()
        .filter(|(s, _)| promise.is_none_or(|q| *s > q))
        .map(|(_, c)| *c)
        .collect();

    // Sizes the file may have: from the promised size through every later change.
    let base = promised.as_deref().unwrap_or(&[]);
    let mut size = base.len() as u64;
    let (mut min, mut max) = if promised.is_some() {
        (size, size)
    } else {
        (0, 0)
    };
    let mut size_before = Vec::with_capacity(later.len());
    for c in &later {
        size_before.push(size);
        size = c.size_after(size);
        min = min.min(size);
        max = max.max(size);
    }
    if image.size < min || image.size > max {
        findings.push(Finding::Size {
            path: path.to_string(),
            found: image.size,
            min,
            max,
            promise: promise_text.clone(),
        });
    }
    if (image.data.len() as u64) < image.size {
        findings.push(Finding::ShortRead {
            path: path.to_string(),
            size: image.size,
            read: image.data.len() as u64,
        });
    }
    let mut first_bad: Option<(u64, u8)> = None;
    let mut bad = 0u64;
    for (i, &value) in image.data.iter().enumerate() {
        let pos = i as u64;
        let owed = base.get(i).copied();
        if owed == Some(value) || owed.is_none() && value == 0 {
            continue;
        }
        let explained = later
            .iter()
            .zip(&size_before)
            .any(|(c, &sb)| c.can_leave(pos, value, sb));
        if !explained {
            bad += 1;
            first_bad.get_or_insert((pos, value));
        }
    }
    if let Some((offset, found)) = first_bad {
        findings.push(Finding::Data {
            path: path.to_string(),
            offset,
            found,
            promised: base.get(offset as usize).copied(),
            bad,
            promise: promise_text,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::crash::model::Change;

    /// A history built by hand. Step `i` starts at write `10 i` and returns at `10 i + 5`
    /// (all before any flush), so a crash position picks exactly which steps started and
    /// which returned.
    struct Script {
        model: Model,
        initial: Model,
        steps: Vec<Step>,
    }

    const ROOT: Ino = 1;
    const A: Ino = 2;
    const B: Ino = 3;
    const FOO: Ino = 4;

    fn started(i: usize) -> Position {
        Position {
            flushes: 0,
            writes: 10 * i as u64,
        }
    }

    fn acked(i: usize) -> Position {
        Position {
            flushes: 0,
            writes: 10 * i as u64 + 5,
        }
    }

    impl Script {
        /// `/A`, `/B` and `/A/foo` holding 100 bytes of 1, all durable.
        fn new() -> Script {
            let mut m = Model::new(ROOT);
            m.mkdir(b"/A", Some(A)).expect("mkdir");
            m.mkdir(b"/B", Some(B)).expect("mkdir");
            m.create(b"/A/foo", false, Some(FOO)).expect("create");
            m.write(FOO, 0, &[1; 100]).expect("write");
            Script {
                initial: m.clone(),
                model: m,
                steps: Vec::new(),
            }
        }

        fn op(
            &mut self,
            call: &str,
            f: impl FnOnce(&mut Model) -> Result<Change, nix::errno::Errno>,
        ) -> &mut Self {
            let change = f(&mut self.model).expect("valid in the script");
            self.push(call, change, None)
        }

        fn persist(&mut self, call: &str, p: Persist) -> &mut Self {
            self.push(call, Change::default(), Some(p))
        }

        fn push(&mut self, call: &str, change: Change, persist: Option<Persist>) -> &mut Self {
            let i = self.steps.len();
            self.steps.push(Step {
                call: call.into(),
                started: started(i),
                acked: acked(i),
                change,
                persist,
            });
            self
        }

        fn history(&self) -> History {
            History {
                initial: self.initial.clone(),
                steps: self.steps.clone(),
            }
        }

        /// Judge the tree `m` for a crash at `crash`.
        fn judge(&self, crash: Position, m: &Model) -> Vec<Finding> {
            let h = self.history();
            judge(&h, &Index::new(&h), crash, &tree(m))
        }
    }

    /// The "filesystem" of these tests: a model's tree as an image would show it.
    fn tree(m: &Model) -> Actual {
        let mut a = Actual {
            root: m.root(),
            ..Actual::default()
        };
        for ((dir, name), ino) in m.entries() {
            let node = m.node(ino).expect("live");
            a.entries
                .insert((dir, name.to_vec()), (ino, node.kind.file_kind()));
            if node.kind == Kind::File {
                a.files.insert(
                    ino,
                    FileImage {
                        size: node.data.len() as u64,
                        data: node.data.clone(),
                    },
                );
            }
        }
        a
    }

    fn names(f: &[Finding]) -> Vec<&'static str> {
        f.iter()
            .map(|f| match f {
                Finding::Mount(_) => "mount",
                Finding::Fsck(_) => "fsck",
                Finding::Read(_) => "read",
                Finding::LostAck { .. } => "lost-ack",
                Finding::Namespace { .. } => "namespace",
                Finding::Kind { .. } => "kind",
                Finding::Size { .. } => "size",
                Finding::Data { .. } => "data",
                Finding::ShortRead { .. } => "short-read",
                Finding::Untracked { .. } => "untracked",
            })
            .collect()
    }

    const BAR: Ino = 10;

    /// create /A/bar, write 50 bytes of 7, fsync it, create /A/baz.
    fn fsynced_bar() -> (Script, Model) {
        let mut s = Script::new();
        s.op("create /A/bar", |m| {
            m.create(b"/A/bar", false, Some(BAR)).map(|(_, c)| c)
        })
        .op("pwrite /A/bar", |m| m.write(BAR, 0, &[7; 50]))
        .persist(
            "fsync /A/bar",
            Persist::Fsync {
                ino: BAR,
                datasync: false,
            },
        );
        let synced = s.model.clone();
        s.op("create /A/baz", |m| {
            m.create(b"/A/baz", false, Some(11)).map(|(_, c)| c)
        });
        (s, synced)
    }

    #[test]
    fn a_crash_after_an_fsync_needs_the_file_its_name_and_its_bytes() {
        let (s, synced) = fsynced_bar();
        let after_fsync = acked(2);
        assert_eq!(s.judge(after_fsync, &synced), vec![]);
        assert_eq!(
            s.judge(acked(3), &s.model),
            vec![],
            "later steps may be there"
        );
        assert_eq!(names(&s.judge(after_fsync, &s.initial)), ["lost-ack"]);
        let mut empty = synced.clone();
        empty.truncate(BAR, 0).expect("truncate");
        assert_eq!(names(&s.judge(after_fsync, &empty)), ["size"]);
        let mut wrong = synced.clone();
        wrong.write(BAR, 25, &[9; 25]).expect("write");
        let f = s.judge(after_fsync, &wrong);
        assert_eq!(names(&f), ["data"]);
        assert!(
            f[0].to_string().contains("byte 25 is 0x09, promised 0x07"),
            "{}",
            f[0]
        );
    }

    #[test]
    fn before_the_fsync_returns_the_file_may_be_missing_or_partly_written() {
        let (s, synced) = fsynced_bar();
        let during = started(2);
        assert_eq!(s.judge(during, &s.initial), vec![]);
        let mut half = synced.clone();
        half.truncate(BAR, 20).expect("truncate");
        assert_eq!(s.judge(during, &half), vec![], "a size between 0 and 50");
        let mut zeros = synced.clone();
        zeros.write(BAR, 0, &[0; 50]).expect("write");
        assert_eq!(s.judge(during, &zeros), vec![], "data not yet written back");
        let mut stale = synced;
        stale.write(BAR, 0, &[0x33; 10]).expect("write");
        assert_eq!(
            names(&s.judge(during, &stale)),
            ["data"],
            "bytes nobody wrote"
        );
        assert_eq!(
            names(&s.judge(started(0), &s.model)),
            ["namespace"],
            "nothing after the crash can be there"
        );
    }

    #[test]
    fn rename_is_atomic_and_a_directory_fsync_makes_it_durable() {
        let mut s = Script::new();
        s.op("rename /A/foo /B/foo", |m| m.rename(b"/A/foo", b"/B/foo"))
            .persist(
                "fsync /B",
                Persist::Fsync {
                    ino: B,
                    datasync: false,
                },
            );
        let crash = acked(1);
        assert_eq!(s.judge(crash, &s.model), vec![]);
        assert_eq!(names(&s.judge(crash, &s.initial)), ["lost-ack"]);
        assert_eq!(
            s.judge(started(1), &s.initial),
            vec![],
            "before the fsync returned"
        );
        let mut both = s.model.clone();
        both.link(b"/B/foo", b"/A/foo").expect("link");
        assert_eq!(names(&s.judge(crash, &both)), ["namespace"]);
        let mut neither = s.model.clone();
        neither.unlink(b"/B/foo").expect("unlink");
        assert_eq!(names(&s.judge(started(1), &neither)), ["namespace"]);
    }

    #[test]
    fn unsynced_changes_to_a_durable_file_may_land_in_part() {
        let mut s = Script::new();
        s.op("pwrite /A/foo", |m| m.write(FOO, 20, &[5; 30]))
            .op("truncate /A/foo 10", |m| m.truncate(FOO, 10))
            .op("pwrite /A/foo", |m| m.write(FOO, 90, &[9; 10]));
        let crash = acked(2);
        let mut partial = s.initial.clone();
        partial.write(FOO, 30, &[5; 5]).expect("write");
        assert_eq!(s.judge(crash, &partial), vec![]);
        assert_eq!(s.judge(crash, &s.model), vec![]);
        let mut cut = s.initial.clone();
        cut.truncate(FOO, 10).expect("truncate");
        assert_eq!(s.judge(crash, &cut), vec![]);
        let mut regrown = s.initial.clone();
        regrown
            .fallocate(FOO, crate::backend::FallocMode::PunchHole, 10, 80)
            .expect("punch");
        regrown.write(FOO, 90, &[9; 10]).expect("write");
        assert_eq!(
            s.judge(crash, &regrown),
            vec![],
            "cut, then grown back with a write"
        );
        let mut short = s.initial.clone();
        short.truncate(FOO, 5).expect("truncate");
        assert_eq!(names(&s.judge(crash, &short)), ["size"]);
        let mut garbage = s.initial.clone();
        garbage.write(FOO, 60, &[0x42]).expect("write");
        assert_eq!(names(&s.judge(crash, &garbage)), ["data"]);
        let before_truncate = Position {
            flushes: 0,
            writes: 9,
        };
        assert_eq!(
            names(&s.judge(before_truncate, &cut)),
            ["size"],
            "the truncate had not started"
        );
    }

    #[test]
    fn entries_nobody_made_and_wrong_kinds_are_found() {
        let s = Script::new();
        let mut extra = s.initial.clone();
        extra.mkdir(b"/B/ghost", Some(99)).expect("mkdir");
        let f = s.judge(acked(0), &extra);
        assert_eq!(names(&f), ["namespace"]);
        assert!(
            f[0].to_string()
                .contains("/B/ghost: expected absent, found ino 99"),
            "{}",
            f[0]
        );
        let mut a = tree(&s.initial);
        a.entries.insert((A, b"foo".to_vec()), (FOO, FileKind::Dir));
        a.files.clear();
        let h = s.history();
        assert_eq!(names(&judge(&h, &Index::new(&h), acked(0), &a)), ["kind"]);
    }

    #[test]
    fn a_reused_inode_number_is_judged_as_the_new_file() {
        let mut s = Script::new();
        s.op("unlink /A/foo", |m| m.unlink(b"/A/foo"))
            .op("create /B/new", |m| {
                m.create(b"/B/new", false, Some(FOO)).map(|(_, c)| c)
            })
            .op("pwrite /B/new", |m| m.write(FOO, 0, &[8; 10]))
            .persist(
                "fsync /B/new",
                Persist::Fsync {
                    ino: FOO,
                    datasync: false,
                },
            );
        let crash = acked(3);
        assert_eq!(s.judge(crash, &s.model), vec![]);
        // The old file's bytes under the new name: not what the new file was given.
        let mut old_bytes = s.model.clone();
        old_bytes.write(FOO, 0, &[1; 100]).expect("write");
        assert_eq!(names(&s.judge(crash, &old_bytes)), ["size", "data"]);
    }

    #[test]
    fn a_sync_promises_every_earlier_operation() {
        let mut s = Script::new();
        s.op("mkdir /B/d", |m| m.mkdir(b"/B/d", Some(20)))
            .op("pwrite /A/foo", |m| m.write(FOO, 0, &[3; 10]))
            .persist("sync", Persist::Sync);
        assert_eq!(s.judge(acked(2), &s.model), vec![]);
        let mut no_dir = s.model.clone();
        no_dir.rmdir(b"/B/d").expect("rmdir");
        assert_eq!(names(&s.judge(acked(2), &no_dir)), ["lost-ack"]);
        let mut old = s.model.clone();
        old.write(FOO, 0, &[1; 10]).expect("write");
        assert_eq!(names(&s.judge(acked(2), &old)), ["data"]);
        assert_eq!(
            s.judge(started(2), &old),
            vec![],
            "before the sync returned"
        );
    }
}
