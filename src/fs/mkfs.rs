//! mkfs: lay an empty labfs onto a device.
//!
//! Geometry (block 4 KiB, inode 512 B, `agcount` AGs, an internal log in AG 0) is chosen as
//! mkfs.xfs chooses it, scaled down so small in-memory devices work. Every AG gets its four
//! headers and empty tree roots at fixed blocks (`format::ag`), a seeded free list, and one
//! free extent covering the rest; AG 0 also holds the log. The root directory is then made
//! through the ordinary inode-allocation and directory code, so mkfs exercises the same paths
//! as everything after it. The superblock is marked "in progress" until the very end.

use std::sync::Arc;

use crate::fs::Fs;
use crate::fs::btree::kinds::{BnoSpec, CntSpec, FinoSpec, FreeExtent, InoSpec};
use crate::fs::btree::store::BufId;
use crate::fs::btree::{self, BtreeSpec, Cursor};
use crate::fs::dev::BlockDev;
use crate::fs::dev::spec::MIN_LABFS_SIZE;
use crate::fs::error::{FsError, FsResult, IoOp, SbProblem};
use crate::fs::format::ag::{
    AGF_SECTOR, AGFL_SECTOR, AGI_SECTOR, Agf, Agi, BNO_ROOT_BLOCK, CNT_ROOT_BLOCK, FINO_ROOT_BLOCK,
    FIRST_FREE_BLOCK, INO_ROOT_BLOCK, NULL_AGBLOCK, SB_SECTOR, agfl_init, agfl_set,
};
use crate::fs::format::dinode::DinodeCore;
use crate::fs::format::sb::{NULL_INO, Superblock, ceil_log2};
use crate::fs::format::{BBSHIFT, BBSIZE, BLOCK_SIZE, BlockKind, Daddr};
use crate::fs::geo::Geometry;
use crate::fs::ialloc::ialloc;
use crate::fs::inode::S_IFDIR;
use crate::fs::options::{DEFAULT_AGCOUNT, MAX_LOG_BYTES, MIN_LOG_BYTES, Options};
use crate::fs::trans::{Resv, Trans};
use crate::fs::treestore::{TreeSpace, TreeStore};

/// Blocks seeded onto each AG's free list (enough for height-1 bno and cnt trees to split).
const AGFL_SEED: u32 = 4;
/// Smallest AG labfs makes (1 MiB).
const MIN_AG_BLOCKS: u64 = 256;
/// Smallest log mkfs makes, in blocks (the `logsize` option's minimum).
const MIN_LOG_BLOCKS: u64 = MIN_LOG_BYTES / BLOCK_SIZE as u64;
/// Largest default log, in blocks (the `logsize` option's maximum).
const MAX_LOG_BLOCKS: u64 = MAX_LOG_BYTES / BLOCK_SIZE as u64;
/// The smallest device mkfs.xfs formats (300 MiB); from here up labfs sizes its log as
/// mkfs.xfs does.
const XFS_MIN_DEVICE: u64 = 300 << 20;
/// mkfs.xfs's smallest default log on such a device, in blocks (64 MiB).
const XFS_MIN_DEFAULT_LOG_BLOCKS: u64 = 16_384;

// The smallest filesystem is one smallest AG: the device grammar refuses anything smaller
// with the same figure, so `--device mem:4k` fails where it is typed, not here.
const _: () = assert!(MIN_AG_BLOCKS * BLOCK_SIZE as u64 == MIN_LABFS_SIZE);

/// At mkfs a tree gets its root at a fixed block.
struct FixedSpace {
    agno: u32,
    next: u32,
}

impl TreeSpace for FixedSpace {
    fn locate(&self, tp: &Trans, _kind: BlockKind, ptr: u64) -> FsResult<Daddr> {
        Ok(tp.fs().geo.ag_daddr(self.agno, ptr as u32))
    }
    fn alloc(&mut self, tp: &mut Trans, _kind: BlockKind, _hint: u64) -> FsResult<(u64, Daddr)> {
        Ok((
            u64::from(self.next),
            tp.fs().geo.ag_daddr(self.agno, self.next),
        ))
    }
    fn free(&mut self, _tp: &mut Trans, _kind: BlockKind, _ptr: u64, _id: BufId) -> FsResult<()> {
        Err(FsError::Invalid("mkfs never frees tree blocks"))
    }
}

fn make_root<S: BtreeSpec>(tp: &mut Trans, agno: u32, block: u32) -> FsResult<()> {
    let mut st = TreeStore::new(tp, FixedSpace { agno, next: block });
    let root = btree::create::<S>(&mut st, u64::from(agno), u64::from(block))?;
    debug_assert_eq!(root.ptr, u64::from(block));
    Ok(())
}

fn new_uuid() -> [u8; 16] {
    let mut u = [0u8; 16];
    let from_urandom = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut u));
    if from_urandom.is_err() {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let mix = t ^ (u128::from(std::process::id()) << 64);
        u = (mix.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835)).to_le_bytes();
    }
    u[6] = (u[6] & 0x0f) | 0x40; // version 4 (random)
    u[8] = (u[8] & 0x3f) | 0x80;
    u
}

/// Choose the geometry for a device of `bytes`.
///
/// Options left to mkfs are fitted to the device (fewer AGs on a small one, a log sized by
/// `default_log_blocks`); options the user gave are honoured or refused, never adjusted:
/// `agcount` groups that would each be under 1 MiB, or a `logsize` log that does not fit in
/// AG 0, is an error, as mkfs.xfs refuses an impossible `-d agcount` or `-l size`.
pub fn plan(bytes: u64, opts: &Options) -> FsResult<Geometry> {
    if bytes < MIN_LABFS_SIZE {
        return Err(FsError::Invalid(
            "device too small: labfs needs at least 1MiB",
        ));
    }
    let dblocks = bytes / BLOCK_SIZE as u64;
    let agcount = match opts.mkfs.agcount {
        Some(n) => {
            let n = u64::from(n.max(1));
            if dblocks / n < MIN_AG_BLOCKS {
                return Err(FsError::Invalid(
                    "agcount too large for this device: each allocation group needs at least 1MiB",
                ));
            }
            n
        }
        None => {
            let mut n = u64::from(DEFAULT_AGCOUNT);
            while n > 1 && dblocks / n < MIN_AG_BLOCKS {
                n -= 1;
            }
            n
        }
    };
    let agblocks = dblocks.div_ceil(agcount);
    if agblocks > u64::from(u32::MAX / 2) {
        return Err(FsError::Invalid(
            "device too large for this agcount: allocation groups are at most 8TiB",
        ));
    }
    // The last AG must be big enough to hold its headers and a chunk; otherwise drop it.
    let last = dblocks - (agcount - 1) * agblocks;
    let dblocks = if last < 64 { dblocks - last } else { dblocks };
    let agcount = dblocks.div_ceil(agblocks);
    let first_log = u64::from(FIRST_FREE_BLOCK + AGFL_SEED);
    let room = agblocks - first_log - 64;
    let logblocks = match opts.mkfs.log_bytes {
        Some(bytes) => {
            let blocks = (bytes / BLOCK_SIZE as u64).max(MIN_LOG_BLOCKS);
            if blocks > room {
                return Err(FsError::Invalid(
                    "logsize too large: the log must fit in the first allocation group",
                ));
            }
            blocks
        }
        None => default_log_blocks(dblocks).min(room),
    };
    if logblocks < MIN_LOG_BLOCKS {
        return Err(FsError::Invalid("device too small for a log"));
    }
    Ok(Geometry {
        dblocks,
        agblocks: agblocks as u32,
        agcount: agcount as u32,
        agblklog: ceil_log2(agblocks as u32) as u8,
        logstart: first_log,
        logblocks: logblocks as u32,
    })
}

/// The log size mkfs picks for a device of `dblocks` blocks when `logsize` is not given.
/// From 300 MiB up, mkfs.xfs's (xfsprogs 6.1): 1/2048 of the device, at least 64 MiB, at
/// most 2 GiB; so a 1 GiB device gets 64 MiB, as `mkfs.xfs` makes on the same image.
/// Smaller devices, which mkfs.xfs refuses, get 1/64 of the device, at least 1 MiB.
fn default_log_blocks(dblocks: u64) -> u64 {
    if dblocks * BLOCK_SIZE as u64 >= XFS_MIN_DEVICE {
        (dblocks / 2048).clamp(XFS_MIN_DEFAULT_LOG_BLOCKS, MAX_LOG_BLOCKS)
    } else {
        (dblocks / 64).max(256)
    }
}

/// Write the headers, roots and free space of AG `agno`.
fn init_ag(tp: &mut Trans, agno: u32) -> FsResult<()> {
    let fs = tp.fs();
    let geo = fs.geo;
    let uuid = fs.uuid;
    let len = geo.ag_len(agno);
    // The headers first, AGI before AGF: they are the locks the AG's trees are changed under.
    let agi_buf = tp.new_buf(
        geo.ag_header_daddr(agno, AGI_SECTOR),
        BlockKind::Agi,
        BBSIZE,
    )?;
    let agf_buf = tp.new_buf(
        geo.ag_header_daddr(agno, AGF_SECTOR),
        BlockKind::Agf,
        BBSIZE,
    )?;
    for (block, f) in [
        (
            BNO_ROOT_BLOCK,
            make_root::<BnoSpec> as fn(&mut Trans, u32, u32) -> FsResult<()>,
        ),
        (CNT_ROOT_BLOCK, make_root::<CntSpec>),
        (INO_ROOT_BLOCK, make_root::<InoSpec>),
        (FINO_ROOT_BLOCK, make_root::<FinoSpec>),
    ] {
        f(tp, agno, block)?;
    }
    let agfl_buf = tp.new_buf(
        geo.ag_header_daddr(agno, AGFL_SECTOR),
        BlockKind::Agfl,
        BBSIZE,
    )?;
    agfl_init(tp.buf_mut(agfl_buf), agno, &uuid);
    for i in 0..AGFL_SEED {
        agfl_set(tp.buf_mut(agfl_buf), i, FIRST_FREE_BLOCK + i);
    }
    tp.log_buf(agfl_buf, 0, BBSIZE - 1);
    let free_start = FIRST_FREE_BLOCK + AGFL_SEED + if agno == 0 { geo.logblocks } else { 0 };
    let free = FreeExtent {
        start: free_start,
        len: len - free_start,
    };
    for (block, is_bno) in [(BNO_ROOT_BLOCK, true), (CNT_ROOT_BLOCK, false)] {
        let mut st = TreeStore::new(
            &mut *tp,
            FixedSpace {
                agno,
                next: NULL_AGBLOCK,
            },
        );
        let root = btree::Root {
            ptr: u64::from(block),
            level: 0,
        };
        if is_bno {
            Cursor::<BnoSpec>::new(root, u64::from(agno)).insert(&mut st, &free)?;
        } else {
            Cursor::<CntSpec>::new(root, u64::from(agno)).insert(&mut st, &free)?;
        }
    }
    let agf = Agf {
        seqno: agno,
        length: len,
        bno_root: BNO_ROOT_BLOCK,
        cnt_root: CNT_ROOT_BLOCK,
        bno_level: 1,
        cnt_level: 1,
        flfirst: 0,
        fllast: AGFL_SEED - 1,
        flcount: AGFL_SEED,
        freeblks: free.len,
        longest: free.len,
        btreeblks: 0,
    };
    agf.encode(tp.buf_mut(agf_buf), &uuid);
    tp.log_buf(agf_buf, 0, BBSIZE - 1);
    let agi = Agi {
        seqno: agno,
        length: len,
        count: 0,
        root: INO_ROOT_BLOCK,
        level: 1,
        freecount: 0,
        newino: NULL_AGBLOCK,
        free_root: FINO_ROOT_BLOCK,
        free_level: 1,
        iblocks: 1,
        fblocks: 1,
    };
    agi.encode(tp.buf_mut(agi_buf), &uuid);
    tp.log_buf(agi_buf, 0, BBSIZE - 1);
    Ok(())
}

/// Write every AG's superblock copy.
fn write_superblocks(fs: &Fs, sb: &Superblock) -> FsResult<()> {
    let mut tp = Trans::new(fs, Resv::Mkfs);
    for agno in 0..fs.geo.agcount {
        let id = tp.new_buf(
            fs.geo.ag_header_daddr(agno, SB_SECTOR),
            BlockKind::Superblock,
            BBSIZE,
        )?;
        sb.encode(tp.buf_mut(id));
        tp.log_buf(id, 0, BBSIZE - 1);
    }
    tp.commit()
}

/// Bytes of zeros written per request when clearing the log.
const ZERO_CHUNK: usize = 1 << 20;

/// Write zeros over the whole log region, as mkfs.xfs does before it writes the log's first
/// record (`libxfs_log_clear`). Nothing another filesystem left there can then look like a
/// record, and the log's first pass overwrites blocks the device already holds, as on a
/// freshly made XFS (on the `mem` device: pages that already exist, as on a loop device
/// over tmpfs).
fn zero_log(dev: &dyn BlockDev, geo: &Geometry) -> FsResult<()> {
    let start = geo.log_daddr() << BBSHIFT;
    let len = geo.log_bytes();
    let zeros = vec![0u8; ZERO_CHUNK];
    let mut done = 0;
    while done < len {
        let n = (len - done).min(ZERO_CHUNK as u64) as usize;
        let at = start + done;
        dev.write_at(&zeros[..n], at, false)
            .map_err(|e| FsError::io(IoOp::ZeroLog, Some(at >> BBSHIFT), e))?;
        done += n as u64;
    }
    Ok(())
}

/// Make a labfs on `dev`, replacing whatever was there.
pub fn mkfs(dev: Arc<dyn BlockDev>, opts: &Options) -> FsResult<()> {
    let geo = plan(dev.size(), opts)?;
    let uuid = new_uuid();
    let sb = Superblock {
        dblocks: geo.dblocks,
        uuid,
        logstart: geo.logstart,
        logblocks: geo.logblocks,
        rootino: NULL_INO,
        agblocks: geo.agblocks,
        agcount: geo.agcount,
        agblklog: geo.agblklog,
        fname: *b"labfs\0\0\0\0\0\0\0",
        inprogress: true,
        icount: 0,
        ifree: 0,
        fdblocks: 0,
        lsn: 0,
    };
    zero_log(dev.as_ref(), &geo)?;
    // The log starts empty at cycle 1, block 0 (as an absolute position: one log's length).
    let log_start = u64::from(geo.log_bb());
    let fs = Fs::assemble(Arc::clone(&dev), opts.mount.clone(), &sb, geo, log_start);
    write_superblocks(&fs, &sb)?;
    // One transaction per AG: each holds its AG's AGI and AGF, and holding one AG's AGF
    // while waiting for the next AG's AGI would be against the lock order.
    for agno in 0..geo.agcount {
        let mut tp = Trans::new(&fs, Resv::Mkfs);
        init_ag(&mut tp, agno)?;
        tp.commit()?;
    }
    // Everything home and an unmount record: the mount below finds a clean log.
    fs.quiesce()?;
    drop(fs);
    // Reload the per-AG summaries from what was written, as a mount would.
    let fs = Fs::mount_inprogress(dev, opts.mount.clone(), &sb)?;
    let rootino = make_root_dir(&fs)?;
    let mut done = fs.current_superblock();
    done.rootino = rootino;
    write_superblocks(&fs, &done)?;
    fs.quiesce()?;
    fs.stop_aild();
    Ok(())
}

/// Allocate and initialise the root directory; returns its inode number.
fn make_root_dir(fs: &Fs) -> FsResult<u64> {
    let mut tp = Trans::new(fs, Resv::Create);
    tp.reserve(crate::fs::namei::CREATE_BLOCKS)?;
    let ino = ialloc(&mut tp, fs.geo.ino(0, 0), true)?;
    let now = crate::fs::now_ns();
    let di = DinodeCore {
        mode: S_IFDIR | 0o755,
        nlink: 2,
        atime: now,
        mtime: now,
        ctime: now,
        crtime: now,
        generation: 0,
        ..DinodeCore::default()
    };
    let w = fs.new_inode(ino, di)?;
    let ip = tp.join_locked(w);
    crate::fs::dir::init(&mut tp, ip, ino)?;
    tp.log_inode(ip);
    tp.commit()?;
    Ok(ino)
}

/// Whether to make a new filesystem before mounting a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Always run mkfs (in-memory devices, `--mkfs`).
    Always,
    /// Mount what is there; run mkfs only if the device is blank.
    IfBlank,
    /// Mount what is there; fail if it is not labfs.
    Never,
}

/// Make a filesystem on `dev` if `format` says so, then mount it.
pub fn mount_formatted(
    dev: Arc<dyn BlockDev>,
    opts: &Options,
    format: Format,
) -> FsResult<Arc<Fs>> {
    let (make, nonzero) = match format {
        Format::Always => (true, None),
        Format::Never => (false, None),
        Format::IfBlank => match crate::fs::mount::probe_blank(dev.as_ref())? {
            None => (true, None),
            Some(found) => (false, Some(found)),
        },
    };
    if make {
        mkfs(Arc::clone(&dev), opts)?;
    }
    // A device that is not blank is only ever mounted: if it holds no labfs, say that it was
    // left alone, and why, rather than formatting over someone's data.
    Fs::mount(dev, opts.mount.clone()).map_err(|e| match (nonzero, e) {
        (Some(found), FsError::BadSuperblock(why)) => FsError::BadSuperblock(SbProblem::NotBlank {
            found,
            why: Box::new(why),
        }),
        (_, e) => e,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_scales_to_small_and_large_devices() {
        let g = plan(16 << 20, &Options::default()).unwrap();
        assert_eq!(g.dblocks, 4096);
        assert_eq!(g.agcount, 4);
        assert!(g.logblocks >= 64 && u64::from(g.logblocks) < u64::from(g.agblocks));
        let g = plan(1 << 30, &Options::default()).unwrap();
        assert_eq!((g.agcount, g.agblocks), (4, 65_536));
        assert_eq!(g.logblocks, 16_384);
        assert!(plan(64 << 10, &Options::default()).is_err());
    }

    #[test]
    fn mkfs_zeroes_the_whole_log_region_as_mkfs_xfs_does() {
        use crate::fs::dev::MemDev;
        const SIZE: u64 = 16 << 20;
        let dev: Arc<dyn BlockDev> = Arc::new(MemDev::new(SIZE).unwrap());
        // Another filesystem's leftovers everywhere, the log region included.
        dev.write_at(&vec![0xab; SIZE as usize], 0, false).unwrap();
        mkfs(Arc::clone(&dev), &Options::default()).unwrap();
        let geo = plan(SIZE, &Options::default()).unwrap();
        let mut log = vec![0u8; geo.log_bytes() as usize];
        dev.read_at(&mut log, geo.log_daddr() << BBSHIFT).unwrap();
        // mkfs's own records fill a few blocks at the start; the rest is zero, not what
        // the device held.
        let tail = &log[log.len() / 2..];
        assert!(
            tail.iter().all(|&b| b == 0),
            "the log's unused half is zero"
        );
    }

    #[test]
    fn the_default_log_is_the_size_mkfs_xfs_gives_the_same_device() {
        // `mkfs.xfs -N` (xfsprogs 6.1) on sparse images of these sizes prints these log
        // blocks; it refuses anything under 300 MiB.
        for (bytes, blocks) in [
            (300u64 << 20, 16_384),
            (1 << 30, 16_384),
            (4352 << 20, 16_384),
            (64 << 30, 16_384),
            (300 << 30, 38_400),
            (1 << 40, 131_072),
        ] {
            let g = plan(bytes, &Options::default()).unwrap();
            assert_eq!(g.logblocks, blocks, "{bytes} bytes");
        }
        // Below that, where mkfs.xfs refuses, 1/64 of the device.
        assert_eq!(
            plan(299 << 20, &Options::default()).unwrap().logblocks,
            1196
        );
    }

    #[test]
    fn the_smallest_device_the_grammar_accepts_can_be_made() {
        let g = plan(MIN_LABFS_SIZE, &Options::default()).unwrap();
        assert_eq!((g.agcount, g.agblocks), (1, 256));
        assert!(plan(MIN_LABFS_SIZE - 512, &Options::default()).is_err());
    }

    #[test]
    fn given_geometry_is_refused_when_it_does_not_fit_never_adjusted() {
        let opts = |s: &str| Options::parse(s).unwrap();
        // 16 MiB: 16 groups of 1 MiB fit, 17 do not.
        assert_eq!(plan(16 << 20, &opts("agcount=16")).unwrap().agcount, 16);
        assert!(matches!(
            plan(16 << 20, &opts("agcount=17")),
            Err(FsError::Invalid(m)) if m.contains("agcount")
        ));
        // The log lives in AG 0: 64 MiB in four 16 MiB groups has room for 8 MiB, not 32 MiB.
        assert_eq!(plan(64 << 20, &opts("logsize=8m")).unwrap().logblocks, 2048);
        assert!(matches!(
            plan(64 << 20, &opts("logsize=32m")),
            Err(FsError::Invalid(m)) if m.contains("logsize")
        ));
        // Left to mkfs, both are fitted to the device.
        let g = plan(2 << 20, &Options::default()).unwrap();
        assert_eq!(g.agcount, 2);
    }

    /// Why a device does not mount, as the superblock reason the mount returns.
    mod superblock_reasons {
        use super::*;
        use crate::fs::cksum::Cksum;
        use crate::fs::dev::MemDev;
        use crate::fs::dev::signature::NotBlank;
        use crate::fs::format::endian::put_u16;

        const SIZE: u64 = 16 << 20;

        fn made() -> Arc<dyn BlockDev> {
            let dev: Arc<dyn BlockDev> = Arc::new(MemDev::new(SIZE).unwrap());
            mkfs(Arc::clone(&dev), &Options::default()).unwrap();
            dev
        }

        fn mount(dev: Arc<dyn BlockDev>) -> FsError {
            Fs::mount(dev, Options::default().mount).unwrap_err()
        }

        /// Change the primary superblock with `edit`, then give it a good CRC again (so
        /// the mount gets past the CRC to the field being tested).
        fn edit_sb(dev: &dyn BlockDev, edit: impl FnOnce(&mut [u8])) {
            let mut b = vec![0u8; BBSIZE];
            dev.read_at(&mut b, 0).unwrap();
            edit(&mut b);
            Cksum::default().update(BlockKind::Superblock, &mut b);
            dev.write_at(&b, 0, false).unwrap();
        }

        #[test]
        fn a_blank_device_is_blank() {
            let dev: Arc<dyn BlockDev> = Arc::new(MemDev::new(SIZE).unwrap());
            assert_eq!(
                mount_formatted(Arc::clone(&dev), &Options::default(), Format::Never).err(),
                Some(FsError::BadSuperblock(SbProblem::Blank))
            );
            assert_eq!(mount(dev), FsError::BadSuperblock(SbProblem::Blank));
        }

        #[test]
        fn a_foreign_magic_is_bad_magic() {
            let dev = made();
            edit_sb(dev.as_ref(), |b| b[0..4].copy_from_slice(b"EXT4"));
            assert_eq!(
                mount(dev),
                FsError::BadSuperblock(SbProblem::BadMagic {
                    found: u32::from_be_bytes(*b"EXT4")
                })
            );
        }

        #[test]
        fn a_flipped_bit_is_a_superblock_crc_error() {
            let dev = made();
            let mut b = vec![0u8; BBSIZE];
            dev.read_at(&mut b, 0).unwrap();
            b[60] ^= 0x04;
            dev.write_at(&b, 0, false).unwrap();
            assert!(
                matches!(
                    mount(dev),
                    FsError::Crc {
                        kind: BlockKind::Superblock,
                        daddr: 0,
                        ..
                    }
                ),
                "a flipped bit in the superblock"
            );
        }

        #[test]
        fn a_newer_version_is_unsupported() {
            let dev = made();
            edit_sb(dev.as_ref(), |b| put_u16(b, 100, 9));
            assert_eq!(
                mount(dev),
                FsError::BadSuperblock(SbProblem::UnsupportedVersion { version: 9 })
            );
        }

        #[test]
        fn a_filesystem_larger_than_its_device_does_not_fit() {
            let dev = made();
            // The first half of the image on a device half the size (a truncated copy).
            let half: Arc<dyn BlockDev> = Arc::new(MemDev::new(SIZE / 2).unwrap());
            let mut b = vec![0u8; (SIZE / 2) as usize];
            dev.read_at(&mut b, 0).unwrap();
            half.write_at(&b, 0, false).unwrap();
            assert_eq!(
                mount(half),
                FsError::BadSuperblock(SbProblem::DoesNotFit {
                    dblocks: SIZE / BLOCK_SIZE as u64,
                    dev_bytes: SIZE / 2,
                })
            );
        }

        #[test]
        fn an_unfinished_mkfs_is_named() {
            let dev = made();
            edit_sb(dev.as_ref(), |b| b[126] = 1);
            assert_eq!(
                mount(dev),
                FsError::BadSuperblock(SbProblem::MkfsUnfinished)
            );
        }

        #[test]
        fn a_device_that_is_not_blank_is_left_alone_with_both_reasons() {
            let dev: Arc<dyn BlockDev> = Arc::new(MemDev::new(SIZE).unwrap());
            let mut b = vec![0u8; BBSIZE];
            b[0] = 1;
            dev.write_at(&b, 70_144, false).unwrap();
            let err = mount_formatted(Arc::clone(&dev), &Options::default(), Format::IfBlank)
                .unwrap_err();
            assert_eq!(
                err,
                FsError::BadSuperblock(SbProblem::NotBlank {
                    found: NotBlank {
                        first_nonzero: 70_144,
                        signature: None
                    },
                    why: Box::new(SbProblem::Blank),
                })
            );
            // Nothing was written: sector 0 is still zero.
            let mut s0 = vec![1u8; BBSIZE];
            dev.read_at(&mut s0, 0).unwrap();
            assert!(s0.iter().all(|&x| x == 0));
        }
    }
}
