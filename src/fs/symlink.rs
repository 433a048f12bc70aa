//! Symbolic links: where a link's target lives, and reading it back.
//!
//! As in XFS (`xfs_symlink.c`), a target short enough for the inode's literal area (336
//! bytes) is stored there, in the *local* fork format, with `di.size` its length; a longer
//! one (at most [`SYMLINK_MAXLEN`] bytes) goes to one *remote* block, file block 0 of the
//! link, mapped by an ordinary extent. The remote block is metadata: it is written through a
//! transaction and the buffer cache (so it is logged and written home like any other
//! metadata, and a crash never leaves a link pointing at a block that was not written), and
//! it is self-describing with XFS v5's `xfs_dsymlink_hdr`:
//!
//! | off | size | field | meaning |
//! |----:|----:|-------|---------|
//! | 0 | 4 | magic | `XSLM` |
//! | 4 | 4 | offset | byte offset of this block's piece of the target (always 0: one block) |
//! | 8 | 4 | bytes | bytes of the target in this block |
//! | 12 | 4 | crc | CRC-32C of the whole block |
//! | 16 | 16 | uuid | filesystem UUID |
//! | 32 | 8 | owner | the link's inode number |
//! | 40 | 8 | blkno | this block's address, in 512-byte sectors |
//! | 48 | 8 | lsn | LSN of the last write |
//! | 56 | bytes | target | the target, not NUL-terminated |
//!
//! A link's target never changes, so nothing here rewrites a remote block; freeing the link
//! invalidates its buffer (`forget_remote`) so a cached copy is never written over the
//! block's next owner.

use crate::fs::Fs;
use crate::fs::bmap;
use crate::fs::buf::GetMode;
use crate::fs::error::{FsError, FsResult};
use crate::fs::format::dinode::LITERAL_SIZE;
use crate::fs::format::endian::{get_u32, get_u64, put_u32, put_u64};
use crate::fs::format::{BLOCK_SIZE, BlockKind, Daddr, Magic};
use crate::fs::inode::{DataFork, InodeCore};
use crate::fs::trans::{InodeId, Trans};

/// Longest target (XFS's `XFS_SYMLINK_MAXLEN`).
pub const SYMLINK_MAXLEN: usize = 1024;
/// Size of the remote block header.
pub const HDR_SIZE: usize = 56;
const OFF_OFFSET: usize = 4;
const OFF_BYTES: usize = 8;
const OFF_UUID: usize = 16;
const OFF_OWNER: usize = 32;
const OFF_BLKNO: usize = 40;

/// Check a target given to symlink(2): not empty (ENOENT, as Linux), at most
/// [`SYMLINK_MAXLEN`] bytes (ENAMETOOLONG), no NUL.
pub fn check_target(target: &[u8]) -> FsResult<()> {
    if target.is_empty() {
        return Err(FsError::NotFound);
    }
    if target.len() > SYMLINK_MAXLEN {
        return Err(FsError::NameTooLong);
    }
    if target.contains(&0) {
        return Err(FsError::Invalid("symlink target contains NUL"));
    }
    Ok(())
}

/// Whether a target of `len` bytes is stored in the inode itself.
pub fn is_inline(len: usize) -> bool {
    len <= LITERAL_SIZE
}

/// Store `target` (already checked) as the contents of the new link `ip`, joined to `tp`
/// with an empty fork: inline, or in a newly allocated remote block.
pub(crate) fn store(tp: &mut Trans, ip: InodeId, target: &[u8]) -> FsResult<()> {
    if is_inline(target.len()) {
        let ic = tp.ic_mut(ip);
        ic.fork = DataFork::Local(target.into());
        ic.di.size = target.len() as u64;
        tp.log_inode(ip);
        return Ok(());
    }
    let owner = tp.ino(ip);
    let added = bmap::alloc_blocks(tp, ip, 0, 1, false)?;
    let Some(e) = added.first() else {
        return Err(FsError::NoSpace);
    };
    let daddr = Daddr::of_block(e.startblock);
    let uuid = tp.fs().uuid;
    let id = tp.new_buf(daddr, BlockKind::Symlink, BLOCK_SIZE)?;
    let b = tp.buf_mut(id);
    if let Magic::U32(m) = BlockKind::Symlink.magic() {
        put_u32(b, 0, m);
    }
    put_u32(b, OFF_OFFSET, 0);
    put_u32(b, OFF_BYTES, target.len() as u32);
    b[OFF_UUID..OFF_UUID + 16].copy_from_slice(&uuid);
    put_u64(b, OFF_OWNER, owner);
    put_u64(b, OFF_BLKNO, daddr.0);
    b[HDR_SIZE..HDR_SIZE + target.len()].copy_from_slice(target);
    tp.log_buf(id, 0, HDR_SIZE + target.len() - 1);
    tp.ic_mut(ip).di.size = target.len() as u64;
    tp.log_inode(ip);
    Ok(())
}

/// The target of link `ino`, whose locked core is `core`: from the literal area, or read
/// and verified from its remote block. Every inconsistency is a typed corruption error.
pub(crate) fn read_target(fs: &Fs, ino: u64, core: &InodeCore) -> FsResult<Vec<u8>> {
    let size = core.di.size as usize;
    let inode_corrupt = |what: String| FsError::Corrupt {
        kind: BlockKind::Inode,
        daddr: fs.geo.ino_location(ino).0.0,
        what: format!("symlink {ino}: {what}"),
    };
    if size == 0 || size > SYMLINK_MAXLEN {
        return Err(inode_corrupt(format!("target length {size}")));
    }
    match &core.fork {
        DataFork::Local(bytes) if bytes.len() == size && is_inline(size) => Ok(bytes.to_vec()),
        DataFork::Local(bytes) => Err(inode_corrupt(format!(
            "inline target of {} bytes, size says {size}",
            bytes.len()
        ))),
        fork => {
            let ext = fork.extents();
            let first = match ext {
                [e] if e.startoff == 0 && e.blockcount == 1 && !e.is_delalloc() => e,
                _ => {
                    return Err(inode_corrupt(format!(
                        "a remote target needs one mapped block, the fork has {} extents",
                        ext.len()
                    )));
                }
            };
            if is_inline(size) {
                return Err(inode_corrupt(format!(
                    "a {size}-byte target is stored remotely"
                )));
            }
            let daddr = Daddr::of_block(first.startblock);
            let g = fs
                .bufs
                .get(daddr, BlockKind::Symlink, BLOCK_SIZE, GetMode::Read)?;
            let b = g.bytes();
            let block_corrupt = |what: String| FsError::Corrupt {
                kind: BlockKind::Symlink,
                daddr: daddr.0,
                what: format!("symlink {ino}: {what}"),
            };
            if get_u64(b, OFF_BLKNO) != daddr.0 {
                return Err(block_corrupt(format!(
                    "blkno {} is not the block's address",
                    get_u64(b, OFF_BLKNO)
                )));
            }
            if b[OFF_UUID..OFF_UUID + 16] != fs.uuid {
                return Err(block_corrupt("filesystem UUID mismatch".into()));
            }
            if get_u64(b, OFF_OWNER) != ino {
                return Err(block_corrupt(format!("owner {}", get_u64(b, OFF_OWNER))));
            }
            let (offset, bytes) = (get_u32(b, OFF_OFFSET), get_u32(b, OFF_BYTES) as usize);
            if offset != 0 || bytes != size {
                return Err(block_corrupt(format!(
                    "holds {bytes} bytes at offset {offset}, the link is {size} bytes"
                )));
            }
            Ok(b[HDR_SIZE..HDR_SIZE + size].to_vec())
        }
    }
}

/// Before a link's blocks are freed (its inode locked, `core`): drop its remote block from
/// the buffer cache, so a dirty copy is never written home over the block's next owner
/// (`xfs_trans_binval`).
pub(crate) fn forget_remote(fs: &Fs, core: &InodeCore) -> FsResult<()> {
    if !core.is_symlink() {
        return Ok(());
    }
    for e in core.fork.extents().iter().filter(|e| !e.is_delalloc()) {
        for b in e.startblock..e.startblock + u64::from(e.blockcount) {
            let mut g = fs.bufs.get(
                Daddr::of_block(b),
                BlockKind::Symlink,
                BLOCK_SIZE,
                GetMode::New,
            )?;
            fs.bufs.invalidate(&mut g);
        }
    }
    Ok(())
}

impl Fs {
    /// readlink(2): the target of a symbolic link (`Invalid`, EINVAL, for anything else).
    pub fn readlink(&self, ip: &std::sync::Arc<crate::fs::inode::Inode>) -> FsResult<Vec<u8>> {
        self.check_live()?;
        let r = crate::fs::inode::InodeRead::lock(std::sync::Arc::clone(ip));
        if !r.is_symlink() {
            return Err(FsError::Invalid("not a symbolic link"));
        }
        read_target(self, ip.ino, &r)
    }
}
