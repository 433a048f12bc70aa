//! The one place numbers are encoded for the disk: big-endian fields, little-endian CRCs.
//!
//! Every on-disk structure reads and writes its fields through these helpers, so a
//! platform-width integer can never reach the disk and a short buffer is a typed error at
//! the caller, not a panic: callers check lengths once per structure, then use these.

/// Read a big-endian u16 at `off`.
#[inline]
pub fn get_u16(b: &[u8], off: usize) -> u16 {
    u16::from_be_bytes([b[off], b[off + 1]])
}

/// Read a big-endian u32 at `off`.
#[inline]
pub fn get_u32(b: &[u8], off: usize) -> u32 {
    u32::from_be_bytes(b[off..off + 4].try_into().expect("4 bytes"))
}

/// Read a big-endian u64 at `off`.
#[inline]
pub fn get_u64(b: &[u8], off: usize) -> u64 {
    u64::from_be_bytes(b[off..off + 8].try_into().expect("8 bytes"))
}

/// Write a big-endian u16 at `off`.
#[inline]
pub fn put_u16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_be_bytes());
}

/// Write a big-endian u32 at `off`.
#[inline]
pub fn put_u32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_be_bytes());
}

/// Write a big-endian u64 at `off`.
#[inline]
pub fn put_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_be_bytes());
}

/// Read a stored CRC (little-endian, as XFS stores `~crc32c`).
#[inline]
pub fn get_crc(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().expect("4 bytes"))
}

/// Store a CRC little-endian.
#[inline]
pub fn put_crc(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_big_endian_and_crcs_little_endian() {
        let mut b = [0u8; 16];
        put_u32(&mut b, 0, 0x0102_0304);
        assert_eq!(&b[..4], &[1, 2, 3, 4]);
        put_crc(&mut b, 4, 0x0102_0304);
        assert_eq!(&b[4..8], &[4, 3, 2, 1]);
        put_u64(&mut b, 8, 0x1122_3344_5566_7788);
        assert_eq!(get_u64(&b, 8), 0x1122_3344_5566_7788);
        put_u16(&mut b, 0, 0xbeef);
        assert_eq!(get_u16(&b, 0), 0xbeef);
        assert_eq!(get_u32(&b, 4), 0x0403_0201);
        assert_eq!(get_crc(&b, 4), 0x0102_0304);
    }
}
