//! The static tracepoint registry: looking events up in the catalogue, and how a user's
//! `--trace` list selects events. What an event and its fields are is [`super::schema`].
//!
//! Every event is a `static` [`EventDef`] declared once in [`super::events`]; the registry is
//! the array of them, fixed at compile time, so looking an event up never allocates and the
//! enabled flag a call site tests is a plain static atomic.
//!
//! Selection ([`EventSet::parse`]) takes a comma list of terms, applied left to right:
//! `name`, a glob (`xfs_ail_*`, `*writeback*`, `?` matches one character), `subsystem:glob`
//! (`xfs:*`), `all`, and `!term` to take matches out again (`xfs_ail_*,!xfs_ail_delete`).
//! A term that matches no event is an error naming it: a typo must not silently trace nothing.

use super::schema::EventDef;
use super::{TraceError, events};

/// Every declared event, in declaration order.
pub fn list() -> &'static [&'static EventDef] {
    events::ALL
}

/// The event called `name`.
pub fn find(name: &str) -> Option<&'static EventDef> {
    list().iter().copied().find(|e| e.name == name)
}

/// The event list as text, one event per line (for `--trace list`).
pub fn render_list() -> String {
    list().iter().map(|e| format!("{e}\n")).collect()
}

/// A set of events chosen by a `--trace` spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventSet {
    member: Vec<bool>,
}

impl Default for EventSet {
    fn default() -> Self {
        EventSet::empty()
    }
}

impl EventSet {
    /// No events.
    pub fn empty() -> Self {
        EventSet {
            member: vec![false; list().len()],
        }
    }

    /// Every event.
    pub fn all() -> Self {
        EventSet {
            member: vec![true; list().len()],
        }
    }

    /// Parse a comma list of names, globs, `subsystem:glob`, `all` and `!term` exclusions
    /// (module docs). Empty terms are ignored, so `""` selects nothing.
    pub fn parse(spec: &str) -> Result<Self, TraceError> {
        let mut set = EventSet::empty();
        for term in spec.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (exclude, pattern) = match term.strip_prefix('!') {
                Some(p) => (true, p.trim()),
                None => (false, term),
            };
            let mut matched = false;
            for e in list() {
                if term_matches(pattern, e) {
                    set.member[e.id()] = !exclude;
                    matched = true;
                }
            }
            if !matched {
                return Err(TraceError::NoSuchEvent(term.to_string()));
            }
        }
        Ok(set)
    }

    /// Add one event.
    pub fn insert(&mut self, e: &EventDef) {
        self.member[e.id()] = true;
    }

    /// Take one event out.
    pub fn remove(&mut self, e: &EventDef) {
        self.member[e.id()] = false;
    }

    /// Whether `e` is in the set.
    pub fn contains(&self, e: &EventDef) -> bool {
        self.member.get(e.id()).copied().unwrap_or(false)
    }

    /// The events in the set, in declaration order.
    pub fn iter(&self) -> impl Iterator<Item = &'static EventDef> + '_ {
        list().iter().copied().filter(|e| self.contains(e))
    }

    /// Their names.
    pub fn names(&self) -> Vec<&'static str> {
        self.iter().map(EventDef::name).collect()
    }

    /// Number of events in the set.
    pub fn len(&self) -> usize {
        self.member.iter().filter(|&&m| m).count()
    }

    /// True when no event is selected.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn term_matches(pattern: &str, e: &EventDef) -> bool {
    if pattern == "all" {
        return true;
    }
    match pattern.split_once(':') {
        Some((subsys, name)) => glob_match(subsys, e.subsystem) && glob_match(name, e.name),
        None => glob_match(pattern, e.name),
    }
}

/// Shell-style match of `text` against `pattern` (`*` any run, `?` one character).
///
/// Iterative with one backtrack point, the classic linear-time wildcard algorithm.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use super::*;
    use crate::trace::schema::{FieldDef, FieldKind, MAX_FIELDS};

    #[test]
    fn glob_handles_stars_and_question_marks() {
        assert!(glob_match("xfs_ail_*", "xfs_ail_push"));
        assert!(glob_match("*writeback*", "sb_mark_inode_writeback"));
        assert!(glob_match("*", ""));
        assert!(glob_match("xfs_ail_p?sh", "xfs_ail_push"));
        assert!(glob_match("*_*_*", "xfs_ail_push"));
        assert!(!glob_match("xfs_ail_*", "xfs_log_force"));
        assert!(!glob_match("xfs_ail_p?sh", "xfs_ail_pinned"));
        assert!(!glob_match("crc32c", "crc32c_x"));
        assert!(!glob_match("*a", "bbb"));
    }

    #[test]
    fn ail_glob_selects_exactly_the_ail_events() {
        let set = EventSet::parse("xfs_ail_*").expect("valid spec");
        assert_eq!(
            set.names(),
            vec![
                "xfs_ail_push",
                "xfs_ail_pinned",
                "xfs_ail_locked",
                "xfs_ail_flushing",
                "xfs_ail_insert",
                "xfs_ail_move",
                "xfs_ail_delete",
            ]
        );
    }

    #[test]
    fn writeback_glob_and_subsystem_prefix_agree() {
        let by_glob = EventSet::parse("*writeback*").expect("valid");
        let by_subsys = EventSet::parse("writeback:*").expect("valid");
        assert_eq!(
            by_glob.names(),
            vec!["sb_mark_inode_writeback", "sb_clear_inode_writeback"]
        );
        assert_eq!(by_glob, by_subsys);
    }

    #[test]
    fn all_then_exclusions_apply_left_to_right() {
        let set = EventSet::parse("all, !xlog_iclog_*, !writeback:*").expect("valid");
        assert_eq!(set.len(), list().len() - 15 - 2);
        assert!(set.contains(find("crc32c").expect("declared")));
        assert!(!set.contains(find("xlog_iclog_sync").expect("declared")));
        // A later positive term re-adds.
        let set = EventSet::parse("!crc32c,crc32c").expect("valid");
        assert_eq!(set.names(), vec!["crc32c"]);
        assert!(EventSet::parse(" , ").expect("valid").is_empty());
    }

    #[test]
    fn a_term_matching_nothing_is_an_error_naming_it() {
        let err = EventSet::parse("xfs_log_force,xfs_ail_pushh").expect_err("typo");
        assert!(matches!(&err, TraceError::NoSuchEvent(t) if t == "xfs_ail_pushh"));
        assert!(err.to_string().contains("'xfs_ail_pushh'"));
        let err = EventSet::parse("!nope*").expect_err("exclusion typo");
        assert!(matches!(&err, TraceError::NoSuchEvent(t) if t == "!nope*"));
        assert!(EventSet::parse("ext4:*").is_err());
    }

    #[test]
    fn every_declared_format_is_valid() {
        for e in list() {
            assert_eq!(e.check_format(), Ok(()), "{e}");
            assert!(e.fields().len() <= MAX_FIELDS, "{e}");
        }
        // The checker does catch mistakes.
        let bad = EventDef {
            id: 0,
            name: "bad",
            subsystem: "t",
            class: "t",
            fields: &[FieldDef {
                name: "x",
                kind: FieldKind::Str,
            }],
            format: "x {x:lsn} {y}",
            enabled: AtomicBool::new(false),
        };
        assert!(bad.check_format().is_err());
    }

    #[test]
    fn ids_are_positions_and_names_are_unique() {
        for (i, e) in list().iter().enumerate() {
            assert_eq!(e.id(), i);
            assert_eq!(find(e.name()).map(EventDef::id), Some(i));
        }
        let listing = render_list();
        assert_eq!(listing.lines().count(), list().len());
        assert!(listing.contains(
            "xfs:xfs_log_force (xfs_log_force_class) dev:dev lsn:u64 caller:str \
             \"dev {dev} lsn 0x{lsn:x} caller {caller}\""
        ));
    }
}
