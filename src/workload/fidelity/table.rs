//! The fidelity table: which XFS statistics labfs must reproduce within [`BAND`] of kernel
//! XFS per file, and the short list of fields that are not held to it, each with its reason.
//!
//! Every field of the stat layout labfs renders (`extent_alloc` through `defer_relog`, the
//! 6.14–6.19 `/proc/fs/xfs/stat` lines, see [`crate::fs::stats::layout`]) is compared; a
//! field is held to the band unless [`RULES`] names it. An entry names one field, or a whole
//! line when `field` is `None`, in every fixture or in one (a count that only one workload
//! makes unstable). Nothing else decides what is compared: the fidelity test and
//! `fsmark --stats-compare` both read this list through [`rule_for`].
//!
//! The band: labfs's count per file divided by the kernel's lies in `[1/BAND, BAND]`, and two
//! zeros agree. Fields counted rarely on both sides (under [`RARE_PER_FILE`] per file, i.e.
//! fewer than one event in fifty files) agree too: at that rate the count is set by a few
//! one-off events of the run (the first directory block, an inode chunk, the final sync), not
//! by what is done per file.
//!
//! Two kinds of entry are not held to the band: exceptions (a difference with a reason to
//! keep, e.g. a count that follows elapsed time) and known gaps: places where labfs still
//! works differently from XFS without a reason to keep it, each saying what labfs does. The
//! journal's lines (`log`, `push_ail`, `icluster`) are judged like every other line. The
//! side-by-side table prints gaps as `GAP`, never as agreement; each labfs change that closes
//! one removes its entry, and the fidelity test then holds the field to the band.

/// How far apart labfs's and the kernel's per-file counts may be: a factor of two either way.
pub const BAND: f64 = 2.0;

/// Per-file rate under which both sides count a field as "rare" and agree (see module docs).
pub const RARE_PER_FILE: f64 = 0.02;

/// How a field is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Held to the band.
    Band,
    /// Not held to the band, for the reason given (a kernel feature labfs does not model, or
    /// a value that depends on elapsed time or the scheduler rather than on the work done).
    Exception(&'static str),
    /// labfs differs from XFS here without a reason to keep: a known gap, listed with what
    /// labfs does differently, until the labfs change that closes it lands (issue 10). Shown
    /// as a gap, never as agreement.
    Gap(&'static str),
}

impl Rule {
    /// One word for the table's rule column.
    pub fn label(self) -> &'static str {
        match self {
            Rule::Band => "2x",
            Rule::Exception(_) => "exception",
            Rule::Gap(_) => "gap",
        }
    }

    /// The reason a field is not held to the band.
    pub fn reason(self) -> Option<&'static str> {
        match self {
            Rule::Band => None,
            Rule::Exception(r) | Rule::Gap(r) => Some(r),
        }
    }
}

/// One entry of [`RULES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldRule {
    /// The stat line (`log`, `buf`, ...).
    pub line: &'static str,
    /// The field's short name in [`crate::fs::stats::layout`], or `None` for every field of
    /// the line.
    pub field: Option<&'static str>,
    /// The fixture the entry is for (its directory name), or `None` for every fixture.
    pub fixture: Option<&'static str>,
    /// How it is judged.
    pub rule: Rule,
}

const fn field_rule(line: &'static str, field: &'static str, rule: Rule) -> FieldRule {
    FieldRule {
        line,
        field: Some(field),
        fixture: None,
        rule,
    }
}

const fn fixture_rule(
    fixture: &'static str,
    line: &'static str,
    field: &'static str,
    rule: Rule,
) -> FieldRule {
    FieldRule {
        line,
        field: Some(field),
        fixture: Some(fixture),
        rule,
    }
}

/// The fixture with two fsync threads.
const TWO_THREADS: &str = "s1-4k-n2000-t2";

const AIL_TIMER: &str = "xfsaild counts a push pass every 50 ms while the AIL holds items, so \
     the kernel's count follows the run's elapsed time, not its work";
const NO_XATTRS: &str = "XFS looks up the security xattr on a file's first write \
     (file_remove_privs, then S_NOSEC); labfs has no extended attributes to look up";
const TWO_THREAD_TIMING: &str = "with two threads, how many free-space records the \
     unlinks leave, and so how often the free-space and free-inode B+tree leaves fill and \
     shift and how many records each shift moves, follows where the inodegc batches end, \
     which follows the scheduler (a thread preempted for a jiffy lets the worker take a short \
     batch), on both sides. Kernel 6.18, this fixture's setup, per file: idle (the fixture \
     and 3 more runs) abtb2 lshift 0.21-0.32, abtc2 lshift 0.14-0.31, abtb2 moves 208-276, \
     abtc2 moves 248-305, abtc2 rshift 0-0.008; with two CPU-bound processes beside it, 3 of \
     10 runs shifted no leaf at all (increment and lshift 0, abtb2 moves 84-115, abtc2 moves \
     117-152, fibt2 moves 0.16-0.21, against the fixture's 0.48) and the other 7 had abtb2 \
     lshift 0.19-0.24, abtc2 rshift and decrement 0-0.017. labfs (per-CPU inodegc lists \
     like the kernel's): idle, 10 of 10 runs within 2x of the fixture in all of these; \
     beside the same two processes, 12 runs: abtb2 lshift 0.06-0.29, abtc2 lshift 0-0.30, \
     abtb2 moves 114-264, abtc2 moves 155-291, fibt2 moves 0.23-0.51, abtc2 rshift 0-0.016 \
     (0.026-0.061 in 3 of 10 runs of an earlier loaded batch): the same modes as the \
     kernel's, so a single kernel run cannot hold labfs to 2x here";
const NO_ATTR_FORK: &str = "the fixtures' kernel runs with a security module, so XFS gives \
     every new inode an empty attribute fork (xfs_create_need_xattr) at its default fork \
     offset of 192 bytes: the data fork holds 12 extent records, not the 21 of the whole \
     literal area, and the test directory becomes a B+tree at 13 extents (read with xfs_db on \
     this kernel: forkoff 24, a B+tree of 17 extents after the s3 creates). labfs has no \
     extended attributes, so no attribute fork, and applies the same rule to the whole \
     literal area: its directory converts at 22 extents, which it reaches in s0 and s1-4k \
     (within 2x there) but not in s1-64k, s2, s3 and s4, where the kernel compares 0.03-0.06 \
     and moves 0.04-0.05 records per file and labfs none";

/// The fixture with one thread making and removing 20,000 empty files.
const S0: &str = "s0-n20000";

const S0_CHUNK_FREE_ORDER: &str = "the removes free 660 inode chunks on both sides, but labfs \
     merges fewer of them into a free neighbour (abtb2 insrec 0.009-0.010 per file against the \
     kernel's 0.007), so more records sit in the by-block leaves and each insert moves more of \
     them. How many merge follows the order the chunks are freed in, which follows where labfs's \
     inodegc batches end (the worker's 1 ms timer against the inline throttle), and that varies \
     from run to run even with the process pinned to one CPU. Measured 2026-12-05 on a 2-core \
     VM: kernel 6.18 (this fixture's setup, 4 runs idle and 6 beside two CPU-bound processes) \
     abtb2 moves 0.115-0.148 per file; labfs 0.164-0.283 (13 runs, idle, loaded and pinned): the 2x \
     band failed one of that day's four suite runs. To close: free the chunks in the kernel's \
     order";

/// Fields not held to the band, with the reason for each (every other field is).
pub static RULES: &[FieldRule] = &[
    field_rule("push_ail", "pushes", Rule::Exception(AIL_TIMER)),
    field_rule("attr", "get", Rule::Exception(NO_XATTRS)),
    field_rule("bmbt2", "compare", Rule::Exception(NO_ATTR_FORK)),
    field_rule("bmbt2", "moves", Rule::Exception(NO_ATTR_FORK)),
    fixture_rule(S0, "abtb2", "moves", Rule::Gap(S0_CHUNK_FREE_ORDER)),
    fixture_rule(
        TWO_THREADS,
        "abtb2",
        "increment",
        Rule::Exception(TWO_THREAD_TIMING),
    ),
    fixture_rule(
        TWO_THREADS,
        "abtb2",
        "lshift",
        Rule::Exception(TWO_THREAD_TIMING),
    ),
    fixture_rule(
        TWO_THREADS,
        "abtb2",
        "moves",
        Rule::Exception(TWO_THREAD_TIMING),
    ),
    fixture_rule(
        TWO_THREADS,
        "abtc2",
        "increment",
        Rule::Exception(TWO_THREAD_TIMING),
    ),
    fixture_rule(
        TWO_THREADS,
        "abtc2",
        "decrement",
        Rule::Exception(TWO_THREAD_TIMING),
    ),
    fixture_rule(
        TWO_THREADS,
        "abtc2",
        "lshift",
        Rule::Exception(TWO_THREAD_TIMING),
    ),
    fixture_rule(
        TWO_THREADS,
        "abtc2",
        "rshift",
        Rule::Exception(TWO_THREAD_TIMING),
    ),
    fixture_rule(
        TWO_THREADS,
        "abtc2",
        "moves",
        Rule::Exception(TWO_THREAD_TIMING),
    ),
    fixture_rule(
        TWO_THREADS,
        "fibt2",
        "moves",
        Rule::Exception(TWO_THREAD_TIMING),
    ),
];

/// The rule for field `field` of line `line` in fixture `fixture` (the band unless [`RULES`]
/// says otherwise; an entry for the fixture wins over one for every fixture, and a field
/// entry over its line's entry).
pub fn rule_for(fixture: &str, line: &str, field: &str) -> Rule {
    let applies = |r: &&FieldRule| r.line == line && r.fixture.is_none_or(|f| f == fixture);
    let for_fixture = RULES
        .iter()
        .filter(applies)
        .find(|r| r.fixture.is_some() && r.field == Some(field));
    let exact = RULES
        .iter()
        .filter(applies)
        .find(|r| r.fixture.is_none() && r.field == Some(field));
    let whole = RULES.iter().filter(applies).find(|r| r.field.is_none());
    for_fixture
        .or(exact)
        .or(whole)
        .map_or(Rule::Band, |r| r.rule)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::stats::layout::{current_layout, line_spec};

    #[test]
    fn every_rule_names_a_rendered_line_and_field() {
        for r in RULES {
            let spec = line_spec(r.line).unwrap_or_else(|| panic!("no line {}", r.line));
            assert!(
                current_layout().iter().any(|l| l.name == r.line),
                "{} is not rendered",
                r.line
            );
            if let Some(f) = r.field {
                assert!(
                    spec.fields.iter().any(|s| s.name == f),
                    "{} has no field {f}",
                    r.line
                );
            }
            assert!(r.rule.reason().is_some_and(|s| !s.is_empty()));
        }
    }

    #[test]
    fn a_field_entry_wins_over_the_default_and_others_are_banded() {
        let f = "s0-n20000";
        assert_eq!(
            rule_for(f, "push_ail", "pushes"),
            Rule::Exception(AIL_TIMER)
        );
        assert_eq!(rule_for(f, "attr", "get"), Rule::Exception(NO_XATTRS));
        assert_eq!(rule_for(f, "log", "writes"), Rule::Band);
        assert_eq!(rule_for(f, "log", "force_sleep"), Rule::Band);
        assert_eq!(rule_for(f, "log", "force"), Rule::Band);
        assert_eq!(rule_for(f, "push_ail", "try_logspace"), Rule::Band);
        assert_eq!(rule_for(f, "push_ail", "pinned"), Rule::Band);
        assert_eq!(rule_for(f, "icluster", "flushcnt"), Rule::Band);
        assert_eq!(rule_for(f, "dir", "lookup"), Rule::Band);
        // Inode cluster buffers are XFS's size: buffer creations are held to the band.
        assert_eq!(rule_for(f, "buf", "create"), Rule::Band);
        assert_eq!(rule_for(f, "buf", "miss_locked"), Rule::Band);
    }

    #[test]
    fn a_fixture_entry_applies_to_that_fixture_only() {
        assert_eq!(
            rule_for(TWO_THREADS, "fibt2", "moves"),
            Rule::Exception(TWO_THREAD_TIMING)
        );
        assert_eq!(rule_for("s1-4k-n2000-t1", "fibt2", "moves"), Rule::Band);
        assert_eq!(rule_for(TWO_THREADS, "fibt2", "compare"), Rule::Band);
        assert_eq!(rule_for(TWO_THREADS, "icluster", "flushcnt"), Rule::Band);
    }

    #[test]
    fn every_fixture_entry_names_a_recorded_fixture() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kernel");
        for f in RULES.iter().filter_map(|r| r.fixture) {
            assert!(dir.join(f).join("stats.txt").is_file(), "no fixture {f}");
        }
    }
}
