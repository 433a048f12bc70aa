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

/// One thing wrong with one block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// The store could not produce the block (CRC mismatch, bad magic on read, I/O).
    Unreadable(FsError),
    /// The store returned fewer bytes than a block.
    ShortBuffer {
        /// Bytes returned.
        len: usize,
    },
    /// The magic number is not this level's block kind's.
    BadMagic {
        /// Magic found.
        found: u32,
        /// Magic expected.
        expected: u32,
    },
    /// The level field disagrees with the block's place in the tree.
    BadLevel {
        /// Level found.
        found: u16,
        /// Level expected.
        expected: u16,
    },
    /// More entries than fit in a block.
    TooManyRecords {
        /// Entries claimed.
        numrecs: usize,
        /// Most that fit.
        max: usize,
    },
    /// Fewer entries than a non-root block must keep.
    TooFewRecords {
        /// Entries present.
        numrecs: usize,
        /// Minimum for the level.
        min: usize,
    },
    /// A node with no entries.
    EmptyNode,
    /// The self-address field is not the block's address.
    BadBlkno {
        /// Address found.
        found: u64,
        /// The block's address.
        expected: u64,
    },
    /// The filesystem UUID does not match.
    BadUuid,
    /// The owner field names another AG or inode.
    BadOwner {
        /// Owner found.
        found: u64,
        /// Owner expected.
        expected: u64,
    },
    /// A child pointer that cannot name a block.
    BadPointer {
        /// 1-based entry index.
        index: usize,
        /// The pointer value.
        value: u64,
    },
    /// The block was already reached through another pointer.
    SharedBlock,
    /// Entry `index` does not sort after entry `index - 1`.
    KeysOutOfOrder {
        /// 1-based entry index.
        index: usize,
    },
    /// The first key does not sort after the last key of the previous block of the level.
    OrderAcrossBlocks {
        /// Last key of the previous block.
        previous: String,
        /// First key of this block.
        first: String,
    },
    /// The parent's key for this block is not the block's first key.
    ParentKeyMismatch {
        /// Key in the parent.
        parent: String,
        /// This block's first key.
        first: String,
    },
    /// The left sibling pointer is not the previous block of the level.
    LeftSibling {
        /// Pointer found (the layout's null value when none).
        found: u64,
        /// Previous block of the level (null when this block is the first).
        expected: u64,
    },
    /// The right sibling pointer is not the next block of the level.
    RightSibling {
        /// Pointer found.
        found: u64,
        /// Next block of the level (null when this block is the last).
        expected: u64,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Unreadable(e) => write!(f, "unreadable: {e}"),
            Problem::ShortBuffer { len } => write!(f, "block buffer is only {len} bytes"),
            Problem::BadMagic { found, expected } => {
                write!(f, "bad magic {found:#x}, expected {expected:#x}")
            }
            Problem::BadLevel { found, expected } => {
                write!(f, "level {found}, expected {expected}")
            }
            Problem::TooManyRecords { numrecs, max } => {
                write!(f, "numrecs {numrecs} exceeds the maximum {max}")
            }
            Problem::TooFewRecords { numrecs, min } => {
                write!(f, "numrecs {numrecs} below the minimum {min}")
            }
            Problem::EmptyNode => f.write_str("interior node with no entries"),
            Problem::BadBlkno { found, expected } => {
                write!(f, "blkno {found}, expected {expected}")
            }
            Problem::BadUuid => f.write_str("filesystem UUID mismatch"),
            Problem::BadOwner { found, expected } => {
                write!(f, "owner {found}, expected {expected}")
            }
            Problem::BadPointer { index, value } => {
                write!(f, "child pointer {index} is {value:#x}")
            }
            Problem::SharedBlock => f.write_str("block reached twice"),
            Problem::KeysOutOfOrder { index } => {
                write!(f, "entry {index} does not sort after entry {}", index - 1)
            }
            Problem::OrderAcrossBlocks { previous, first } => write!(
                f,
                "first key {first} does not sort after the previous block's last key {previous}"
            ),
            Problem::ParentKeyMismatch { parent, first } => {
                write!(f, "parent key {parent} differs from first key {first}")
            }
            Problem::LeftSibling { found, expected } => {
                write!(f, "left sibling {found:#x}, expected {expected:#x}")
            }
            Problem::RightSibling { found, expected } => {
                write!(f, "right sibling {found:#x}, expected {expected:#x}")
            }
        }
    }
}

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
