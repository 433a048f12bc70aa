//! A copy-on-write overlay: a device whose writes stay in memory and never reach the one
//! under it.
//!
//! `labfs check` must not change the image it checks, yet an image whose log needs replay
//! is only consistent once replayed (xfs_repair -n refuses such an image; labfs checks it
//! as the replay would leave it). Mounting through an overlay runs recovery into memory:
//! reads see the replayed blocks, the image stays byte-for-byte as it was.

use crate::fs::fastmap::FastMap;
use std::sync::Arc;

use parking_lot::RwLock;

use crate::fs::dev::{BlockDev, DevError, IoReq, SECTOR_SIZE, check_io};

/// A device that reads through to `inner` except where it has been written.
pub struct OverlayDev {
    inner: Arc<dyn BlockDev>,
    /// Written sectors, by sector number.
    sectors: RwLock<FastMap<u64, Box<[u8]>>>,
}

impl OverlayDev {
    /// An overlay over `inner`, nothing written yet.
    pub fn new(inner: Arc<dyn BlockDev>) -> OverlayDev {
        OverlayDev {
            inner,
            sectors: RwLock::new(FastMap::default()),
        }
    }

    /// Sectors written to the overlay so far.
    pub fn written_sectors(&self) -> usize {
        self.sectors.read().len()
    }
}

impl BlockDev for OverlayDev {
    fn size(&self) -> u64 {
        self.inner.size()
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<(), DevError> {
        check_io(self.size(), IoReq::read(offset, buf.len()), || {
            self.describe()
        })?;
        self.inner.read_at(buf, offset)?;
        let map = self.sectors.read();
        if map.is_empty() {
            return Ok(());
        }
        for (i, s) in buf.chunks_mut(SECTOR_SIZE as usize).enumerate() {
            if let Some(w) = map.get(&(offset / SECTOR_SIZE + i as u64)) {
                s.copy_from_slice(w);
            }
        }
        Ok(())
    }

    fn write_at(&self, buf: &[u8], offset: u64, _fua: bool) -> Result<(), DevError> {
        check_io(self.size(), IoReq::write(offset, buf.len(), false), || {
            self.describe()
        })?;
        let mut map = self.sectors.write();
        for (i, s) in buf.chunks(SECTOR_SIZE as usize).enumerate() {
            map.insert(offset / SECTOR_SIZE + i as u64, s.into());
        }
        Ok(())
    }

    fn flush(&self) -> Result<(), DevError> {
        Ok(())
    }

    fn reads_at_memory_speed(&self) -> bool {
        self.inner.reads_at_memory_speed()
    }

    fn describe(&self) -> String {
        format!("overlay on {}", self.inner.describe())
    }
}
