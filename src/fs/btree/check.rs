//! The structural checker: labfs's `xfs_repair -n` for one B+tree.
//!
//! [`check`] walks the whole tree depth-first from the root and reports every problem it sees
//! as a [`Finding`] (block, level, what is wrong) instead of stopping at the first, so the
//! fsck oracle can print a complete picture. A block whose header cannot be trusted (bad
//! magic, wrong level, impossible record count, unreadable) is reported and not descended
//! into; everything else is checked:
//!
//! - header: magic, level, numrecs within max (and at least min except for the root, at
//!   least 1 in any node), blkno = the block's own address, filesystem UUID, owner;
//! - keys strictly increasing within each block and across each level, left to right;
//! - each parent key equal to its child's first key;
//! - sibling links: each block's left sibling is the previous block of its level, the right
//!   sibling the next one, and the ends of a level point nowhere;
//! - no block reached twice.

use crate::fs::fastmap::FastSet;
use std::fmt;
use std::ops::ControlFlow;

use super::block::{
    Side, SpecGeom, entry_key, header_problems, is_null, numrecs, ptr_at, ptr_ok, sibling_raw,
};
use super::store::BlockStore;
use super::{BtreeSpec, Root};
use crate::fs::error::{FsError, FsResult};
use crate::fs::format::{BlockKind, Daddr};

pub use super::problem::Problem;

/// A problem found in one block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The block's pointer in the tree.
    pub ptr: u64,
    /// Its device address, when the store produced the block.
    pub daddr: Option<Daddr>,
    /// The level the block sits at in the tree.
    pub level: u16,
    /// The block kind expected there.
    pub kind: BlockKind,
    /// What is wrong.
    pub problem: Problem,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} block {:#x}", self.kind, self.ptr)?;
        if let Some(d) = self.daddr {
            write!(f, " (daddr {d})")?;
        }
        write!(f, " level {}: {}", self.level, self.problem)
    }
}

/// The last block seen at one level, for sibling and cross-block order checks.
struct LevelState<K> {
    ptr: u64,
    daddr: Daddr,
    rightsib: u64,
    last_key: Option<K>,
}

/// Structural check for the fsck oracle: every finding with block and what is wrong
/// (key order within and across blocks, parent keys == child first keys, sibling links,
/// levels, numrecs within min/max (root exempt), header magic/blkno/uuid/owner).
///
/// Blocks the store refuses (CRC, magic, I/O) become findings; only failures that say
/// nothing about the tree (the store shut down) are returned as errors.
pub fn check<S: BtreeSpec>(
    st: &mut (impl BlockStore + ?Sized),
    root: Root,
    owner: u64,
) -> FsResult<Vec<Finding>> {
    let () = S::SANE;
    let g = &S::GEOM;
    let null = g.hdr.null;
    let uuid = st.uuid();
    let mut findings = Vec::new();
    let nlevels = usize::from(root.level) + 1;
    let mut levels: Vec<Option<LevelState<S::Key>>> = (0..nlevels).map(|_| None).collect();
    let mut seen = FastSet::default();
    // (pointer, level, parent's key for it, is root)
    let mut stack: Vec<(u64, usize, Option<S::Key>, bool)> = Vec::new();
    if ptr_ok::<S>(root.ptr) {
        stack.push((root.ptr, nlevels - 1, None, true));
    } else {
        findings.push(Finding {
            ptr: root.ptr,
            daddr: None,
            level: root.level,
            kind: S::kind(root.level),
            problem: Problem::BadPointer {
                index: 0,
                value: root.ptr,
            },
        });
    }

    while let Some((ptr, level, parent_key, is_root)) = stack.pop() {
        let lvl = level as u16;
        let kind = S::kind(lvl);
        let mut report = |daddr: Option<Daddr>, problem: Problem| {
            findings.push(Finding {
                ptr,
                daddr,
                level: lvl,
                kind,
                problem,
            });
        };
        if !seen.insert(ptr) {
            report(None, Problem::SharedBlock);
            continue;
        }
        let id = match st.read(kind, ptr) {
            Ok(id) => id,
            Err(e @ (FsError::Crc { .. } | FsError::Corrupt { .. } | FsError::Io { .. })) => {
                report(None, Problem::Unreadable(e));
                continue;
            }
            Err(e) => return Err(e),
        };
        let daddr = st.daddr(id);
        let b = st.bytes(id);

        // Header: report everything; stop here if the contents cannot be interpreted.
        let mut fatal = false;
        header_problems::<S>(b, lvl, daddr, &uuid, owner, |p| {
            fatal |= matches!(
                p,
                Problem::ShortBuffer { .. }
                    | Problem::BadMagic { .. }
                    | Problem::BadLevel { .. }
                    | Problem::TooManyRecords { .. }
            );
            report(Some(daddr), p);
            ControlFlow::Continue(())
        });
        if fatal {
            continue;
        }
        let n = numrecs::<S>(b);
        let min = g.min(level);
        if !is_root && n < min && !(level > 0 && n == 0) {
            report(Some(daddr), Problem::TooFewRecords { numrecs: n, min });
        }

        // Sibling links and order against the previous block of this level.
        let left = sibling_raw::<S>(b, Side::Left);
        let right = sibling_raw::<S>(b, Side::Right);
        let prev = levels[level].take();
        let expected_left = prev.as_ref().map_or(null, |p| p.ptr);
        if left != expected_left {
            report(
                Some(daddr),
                Problem::LeftSibling {
                    found: left,
                    expected: expected_left,
                },
            );
        }
        if let Some(p) = &prev
            && p.rightsib != ptr
        {
            findings.push(Finding {
                ptr: p.ptr,
                daddr: Some(p.daddr),
                level: lvl,
                kind,
                problem: Problem::RightSibling {
                    found: p.rightsib,
                    expected: ptr,
                },
            });
        }
        let mut report = |problem: Problem| {
            findings.push(Finding {
                ptr,
                daddr: Some(daddr),
                level: lvl,
                kind,
                problem,
            });
        };

        // Keys: within the block, against the previous block, against the parent.
        let mut last_key = prev.as_ref().and_then(|p| p.last_key);
        for i in 1..=n {
            let k = entry_key::<S>(b, level, i);
            if let Some(prev_key) = last_key
                && k <= prev_key
            {
                if i == 1 {
                    report(Problem::OrderAcrossBlocks {
                        previous: format!("{prev_key:?}"),
                        first: format!("{k:?}"),
                    });
                } else {
                    report(Problem::KeysOutOfOrder { index: i });
                }
            }
            if i == 1
                && let Some(pk) = parent_key
                && pk != k
            {
                report(Problem::ParentKeyMismatch {
                    parent: format!("{pk:?}"),
                    first: format!("{k:?}"),
                });
            }
            last_key = Some(k);
        }
        levels[level] = Some(LevelState {
            ptr,
            daddr,
            rightsib: right,
            last_key,
        });

        // Children, pushed right to left so the leftmost is checked first.
        if level > 0 {
            for i in (1..=n).rev() {
                let child = ptr_at::<S>(b, i);
                if ptr_ok::<S>(child) {
                    stack.push((child, level - 1, Some(entry_key::<S>(b, level, i)), false));
                } else {
                    report(Problem::BadPointer {
                        index: i,
                        value: child,
                    });
                }
            }
        }
    }

    // The last block of every level must have no right sibling.
    for (level, state) in levels.iter().enumerate() {
        if let Some(s) = state
            && !is_null::<S>(s.rightsib)
        {
            findings.push(Finding {
                ptr: s.ptr,
                daddr: Some(s.daddr),
                level: level as u16,
                kind: S::kind(level as u16),
                problem: Problem::RightSibling {
                    found: s.rightsib,
                    expected: null,
                },
            });
        }
    }
    Ok(findings)
}
