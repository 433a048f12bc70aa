//! An image opened for inspection: read-only, with its geometry found even when the primary
//! superblock is damaged.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::AdminError;
use crate::fs::cksum::Cksum;
use crate::fs::dev::{BlockDev, DevError, FileDev, IoReq, SECTOR_SIZE, check_io};
use crate::fs::error::{FsError, SbProblem};
use crate::fs::format::endian::{get_u16, get_u32};
use crate::fs::format::sb::{SB_MAGIC, SB_VERSION, Superblock};
use crate::fs::format::{BBSIZE, BLOCK_SIZE, BlockKind, Daddr};
use crate::fs::geo::Geometry;

/// Bytes read at a time while scanning for a secondary superblock.
const SCAN_CHUNK: usize = 1 << 20;

/// A labfs image (a file or block device) opened read-only.
pub struct Image {
    path: PathBuf,
    dev: Arc<dyn BlockDev>,
}

/// Where the geometry of an image came from.
#[derive(Debug, Clone)]
pub struct Located {
    /// The superblock the geometry was read from.
    pub sb: Superblock,
    /// The AG whose copy it is (0: the primary).
    pub agno: u32,
    /// Why the primary could not be used, when a secondary was.
    pub primary_problem: Option<FsError>,
    /// The 512 bytes of the copy that was used.
    pub sector: Vec<u8>,
}

impl Located {
    /// The geometry.
    pub fn geometry(&self) -> Geometry {
        Geometry::from_sb(&self.sb)
    }
}

impl Image {
    /// Open `path` (a regular file or a block device) for reading only.
    pub fn open(path: &Path) -> Result<Image, AdminError> {
        let dev = FileDev::open_read_only(path).map_err(AdminError::Open)?;
        Ok(Image {
            path: path.to_path_buf(),
            dev: Arc::new(dev),
        })
    }

    /// Inspect an already open device (`path` names it in messages).
    pub fn on_device(path: &Path, dev: Arc<dyn BlockDev>) -> Image {
        Image {
            path: path.to_path_buf(),
            dev,
        }
    }

    /// The image's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The device.
    pub fn dev(&self) -> &Arc<dyn BlockDev> {
        &self.dev
    }

    /// `len` bytes at `daddr`.
    pub fn read(&self, daddr: Daddr, len: usize) -> Result<Vec<u8>, AdminError> {
        let mut b = vec![0u8; len];
        self.dev
            .read_at(&mut b, daddr.bytes())
            .map_err(AdminError::Io)?;
        Ok(b)
    }

    /// The structure of `kind` at `daddr` (as many bytes as its CRC covers), if its CRC
    /// verifies. The outer error is a device failure; the inner one says what is wrong with
    /// the structure.
    pub fn verified(
        &self,
        daddr: Daddr,
        kind: BlockKind,
    ) -> Result<Result<Vec<u8>, FsError>, AdminError> {
        let b = self.read(daddr, kind.crc_len())?;
        Ok(match Cksum::default().verify(kind, &b) {
            Ok(()) => Ok(b),
            Err(m) => Err(FsError::crc(kind, daddr.0, m)),
        })
    }

    /// Whether `len` bytes at `daddr` lie on the device.
    pub fn contains(&self, daddr: Daddr, len: usize) -> bool {
        daddr
            .0
            .checked_mul(SECTOR_SIZE)
            .and_then(|b| b.checked_add(len as u64))
            .is_some_and(|end| end <= self.dev.size())
    }

    /// The superblock copy at `daddr`, verified (CRC) and decoded.
    pub fn superblock_at(&self, daddr: Daddr) -> Result<(Superblock, Vec<u8>), AdminError> {
        let b = self.read(daddr, BBSIZE)?;
        match verify_superblock(&b, daddr) {
            Ok(sb) => Ok((sb, b)),
            Err(reason) => Err(AdminError::NotLabfs {
                path: self.path.clone(),
                reason,
            }),
        }
    }

    /// The geometry: from the primary superblock, or, when it is unreadable but still looks
    /// like one, from the first intact secondary copy found by scanning the device (as
    /// `xfs_repair` does). Fails with [`AdminError::NotLabfs`] (the primary's problem) when
    /// no copy is intact.
    pub fn geometry(&self) -> Result<Located, AdminError> {
        let sector = self.read(Daddr(0), BBSIZE)?;
        let problem = match verify_superblock(&sector, Daddr(0)) {
            Ok(sb) => {
                return Ok(Located {
                    sb,
                    agno: 0,
                    primary_problem: None,
                    sector,
                });
            }
            Err(e) => e,
        };
        // Scanning reads the whole device, so it is done only for a sector that still looks
        // like a labfs superblock (a bit or two off in the magic, or the magic gone but the
        // block size and version in place): not for a blank or foreign image.
        if !looks_like_a_superblock(&sector) {
            return Err(AdminError::NotLabfs {
                path: self.path.clone(),
                reason: problem,
            });
        }
        match self.find_secondary()? {
            Some((agno, sb, sector)) => Ok(Located {
                sb,
                agno,
                primary_problem: Some(problem),
                sector,
            }),
            None => Err(AdminError::NotLabfs {
                path: self.path.clone(),
                reason: problem,
            }),
        }
    }

    /// Scan the device block by block for a superblock copy that verifies and sits where its
    /// own geometry puts an AG's first block: `(its AG, the superblock, its sector)`.
    fn find_secondary(&self) -> Result<Option<(u32, Superblock, Vec<u8>)>, AdminError> {
        let size = self.dev.size();
        let mut chunk = vec![0u8; SCAN_CHUNK];
        let mut offset = BLOCK_SIZE as u64;
        while offset < size {
            let n = (size - offset).min(SCAN_CHUNK as u64) as usize;
            let n = n - n % BLOCK_SIZE;
            if n == 0 {
                break;
            }
            self.dev
                .read_at(&mut chunk[..n], offset)
                .map_err(AdminError::Io)?;
            for at in (0..n).step_by(BLOCK_SIZE) {
                let sector = &chunk[at..at + BBSIZE];
                let block = (offset + at as u64) / BLOCK_SIZE as u64;
                let daddr = Daddr::of_block(block);
                let Ok(sb) = verify_superblock(sector, daddr) else {
                    continue;
                };
                let agblocks = u64::from(sb.agblocks);
                if block.is_multiple_of(agblocks) && block / agblocks < u64::from(sb.agcount) {
                    return Ok(Some(((block / agblocks) as u32, sb, sector.to_vec())));
                }
            }
            offset += n as u64;
        }
        Ok(None)
    }

    /// This image as a device whose first sector reads as `sector` (a secondary superblock),
    /// so a mount can proceed when only the primary is damaged. Writes are refused.
    pub fn with_primary(&self, sector: &[u8]) -> Arc<dyn BlockDev> {
        let mut s = [0u8; BBSIZE];
        s.copy_from_slice(&sector[..BBSIZE]);
        Arc::new(PrimaryOverlay {
            inner: Arc::clone(&self.dev),
            sector0: s,
        })
    }
}

/// Whether a sector that does not verify still looks like a damaged labfs superblock.
fn looks_like_a_superblock(b: &[u8]) -> bool {
    let magic_bits_off = (get_u32(b, 0) ^ SB_MAGIC).count_ones();
    let fields_in_place = get_u32(b, 4) as usize == BLOCK_SIZE && get_u16(b, 100) == SB_VERSION;
    magic_bits_off <= 2 || fields_in_place
}

/// Verify and decode a superblock sector read from `daddr`. An all-zero sector is "blank"
/// rather than a CRC mismatch, so a never-formatted image is named as such.
fn verify_superblock(b: &[u8], daddr: Daddr) -> Result<Superblock, FsError> {
    if b.iter().all(|&x| x == 0) {
        return Err(FsError::BadSuperblock(SbProblem::Blank));
    }
    if let Err(m) = Cksum::default().verify(BlockKind::Superblock, b) {
        return Err(FsError::crc(BlockKind::Superblock, daddr.0, m));
    }
    Superblock::decode(b, daddr)
}

/// A read-only view of a device with sector 0 replaced.
struct PrimaryOverlay {
    inner: Arc<dyn BlockDev>,
    sector0: [u8; BBSIZE],
}

impl BlockDev for PrimaryOverlay {
    fn size(&self) -> u64 {
        self.inner.size()
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<(), DevError> {
        self.inner.read_at(buf, offset)?;
        if offset == 0 && buf.len() >= BBSIZE {
            buf[..BBSIZE].copy_from_slice(&self.sector0);
        }
        Ok(())
    }

    fn write_at(&self, buf: &[u8], offset: u64, fua: bool) -> Result<(), DevError> {
        let req = IoReq::write(offset, buf.len(), fua);
        check_io(self.size(), req, || self.describe())?;
        Err(DevError::io(
            self.describe(),
            req,
            std::io::Error::from_raw_os_error(libc::EROFS),
        ))
    }

    fn flush(&self) -> Result<(), DevError> {
        Ok(())
    }

    fn describe(&self) -> String {
        format!("{} (primary superblock from a copy)", self.inner.describe())
    }
}
