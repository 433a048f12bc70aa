//! Directories.
//!
//! This first cut holds only the shortform (inside the inode); the block, leaf and node forms
//! extend it (issue 4, directories).

pub mod sf;

use crate::fs::error::{FsError, FsResult};
use crate::fs::inode::DataFork;
use crate::fs::stats::Stat;
use crate::fs::trans::{InodeId, Trans};
use crate::target::{DirEntry, FileKind};

fn local<'t>(tp: &'t Trans, dp: InodeId) -> FsResult<&'t [u8]> {
    match &tp.ic(dp).fork {
        DataFork::Local(b) => Ok(b),
        _ => Err(FsError::Invalid("directory is not in shortform")),
    }
}

fn set_local(tp: &mut Trans, dp: InodeId, bytes: Vec<u8>) {
    let ic = tp.ic_mut(dp);
    ic.di.size = bytes.len() as u64;
    ic.fork = DataFork::Local(bytes.into_boxed_slice());
    tp.log_inode(dp);
}

/// Initialise a new directory's data fork: shortform, empty, with `..` = parent.
pub fn init(tp: &mut Trans, dp: InodeId, parent: u64) -> FsResult<()> {
    set_local(tp, dp, sf::Shortform::new(parent).encode());
    Ok(())
}

/// Look a name up; `..` included; `Ok(None)` if absent.
pub fn lookup(tp: &mut Trans, dp: InodeId, name: &[u8]) -> FsResult<Option<u64>> {
    tp.fs().stats.inc(Stat::DirLookup);
    let sf = sf::Shortform::decode(local(tp, dp)?)?;
    if name == b".." {
        return Ok(Some(sf.parent));
    }
    Ok(sf.find(name).map(|e| e.ino))
}

/// Add an entry (the caller checked the name is absent).
pub fn add(tp: &mut Trans, dp: InodeId, name: &[u8], ino: u64, kind: FileKind) -> FsResult<()> {
    tp.fs().stats.inc(Stat::DirCreate);
    let mut sf = sf::Shortform::decode(local(tp, dp)?)?;
    sf.add(name, ino, kind);
    let bytes = sf.encode();
    if bytes.len() > crate::fs::format::dinode::LITERAL_SIZE {
        return Err(FsError::NoSpace);
    }
    set_local(tp, dp, bytes);
    Ok(())
}

/// Remove an entry; returns its inode.
pub fn remove(tp: &mut Trans, dp: InodeId, name: &[u8]) -> FsResult<u64> {
    tp.fs().stats.inc(Stat::DirRemove);
    let mut sf = sf::Shortform::decode(local(tp, dp)?)?;
    let ino = sf.remove(name).ok_or(FsError::NotFound)?;
    set_local(tp, dp, sf.encode());
    Ok(ino)
}

/// Point an existing entry (or `..`) at another inode; returns the old one.
pub fn replace(
    tp: &mut Trans,
    dp: InodeId,
    name: &[u8],
    ino: u64,
    kind: FileKind,
) -> FsResult<u64> {
    let mut sf = sf::Shortform::decode(local(tp, dp)?)?;
    let old = if name == b".." {
        std::mem::replace(&mut sf.parent, ino)
    } else {
        let e = sf.find_mut(name).ok_or(FsError::NotFound)?;
        e.kind = kind;
        std::mem::replace(&mut e.ino, ino)
    };
    set_local(tp, dp, sf.encode());
    Ok(old)
}

/// Only `.` and `..` left?
pub fn is_empty(tp: &mut Trans, dp: InodeId) -> FsResult<bool> {
    Ok(sf::Shortform::decode(local(tp, dp)?)?.entries.is_empty())
}

/// Every entry except `.`/`..`, in directory order.
pub fn readdir(tp: &mut Trans, dp: InodeId) -> FsResult<Vec<DirEntry>> {
    tp.fs().stats.inc(Stat::DirGetdents);
    let sf = sf::Shortform::decode(local(tp, dp)?)?;
    Ok(sf
        .entries
        .into_iter()
        .map(|e| DirEntry {
            name: e.name,
            ino: e.ino,
            kind: e.kind,
        })
        .collect())
}

/// fsck: every structural problem found in this directory.
pub fn check(tp: &mut Trans, dp: InodeId) -> FsResult<Vec<String>> {
    let mut out = Vec::new();
    match sf::Shortform::decode(local(tp, dp)?) {
        Ok(sf) => {
            let mut names: Vec<&[u8]> = sf.entries.iter().map(|e| e.name.as_slice()).collect();
            names.sort();
            if names.windows(2).any(|w| w[0] == w[1]) {
                out.push("duplicate names".to_string());
            }
            if tp.ic(dp).di.size != sf.encode().len() as u64 {
                out.push("size does not match the shortform data".to_string());
            }
        }
        Err(e) => out.push(e.to_string()),
    }
    Ok(out)
}
