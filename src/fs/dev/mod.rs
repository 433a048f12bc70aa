//! TEMPORARY integration shim, replaced by the dev branch on merge.
#![allow(missing_docs, dead_code)]
use parking_lot::Mutex;
use std::collections::HashMap;
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DevError {
    #[error("out of range")]
    OutOfRange,
}
pub trait BlockDev: Send + Sync {
    fn size(&self) -> u64;
    fn sector_size(&self) -> u32 {
        512
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<(), DevError>;
    fn write_at(&self, buf: &[u8], offset: u64, fua: bool) -> Result<(), DevError>;
    fn flush(&self) -> Result<(), DevError>;
    fn describe(&self) -> String;
}
pub struct ShimMem {
    size: u64,
    sectors: Mutex<HashMap<u64, [u8; 512]>>,
}
impl ShimMem {
    pub fn new(size: u64) -> Self {
        ShimMem {
            size,
            sectors: Mutex::new(HashMap::new()),
        }
    }
}
impl BlockDev for ShimMem {
    fn size(&self) -> u64 {
        self.size
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<(), DevError> {
        if offset + buf.len() as u64 > self.size {
            return Err(DevError::OutOfRange);
        }
        let s = self.sectors.lock();
        for (i, c) in buf.chunks_mut(512).enumerate() {
            match s.get(&(offset / 512 + i as u64)) {
                Some(d) => c.copy_from_slice(d),
                None => c.fill(0),
            }
        }
        Ok(())
    }
    fn write_at(&self, buf: &[u8], offset: u64, _fua: bool) -> Result<(), DevError> {
        if offset + buf.len() as u64 > self.size {
            return Err(DevError::OutOfRange);
        }
        let mut s = self.sectors.lock();
        for (i, c) in buf.chunks(512).enumerate() {
            s.insert(offset / 512 + i as u64, c.try_into().unwrap());
        }
        Ok(())
    }
    fn flush(&self) -> Result<(), DevError> {
        Ok(())
    }
    fn describe(&self) -> String {
        "shim".into()
    }
}
