//! What a device that is not blank holds, by the signatures other tools write.
//!
//! A tool that formats without being asked must be sure the device is unused: mkfs.xfs
//! refuses (without `-f`) when blkid finds any known signature. labfs does the same with its
//! own short list: the first MiB must be zero, and when it is not, the refusal names what was
//! found, so a user who pointed `--device` at the wrong image sees "an ext4 filesystem", not a
//! byte offset. Offsets and magic numbers are the formats' own (ext2/3/4: the superblock at
//! 1 KiB, magic 0xEF53 at 0x38, feature words at 0x5C/0x60; XFS: `XFSB` at 0; btrfs:
//! `_BHRfS_M` at 64 KiB + 0x40; swap: `SWAPSPACE2` in the last 10 bytes of the first page;
//! GPT: `EFI PART` at 512; MBR: 0x55AA at 510).

/// Bytes at the start of a device that must be zero for it to count as blank: where every
/// common filesystem, partition table and swap signature lives. One sector is not enough:
/// ext4 leaves its first KiB zero and keeps its superblock at 1 KiB.
pub const BLANK_PROBE_BYTES: usize = 1 << 20;

/// What the first bytes of a non-blank device hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotBlank {
    /// The first non-zero byte's offset.
    pub first_nonzero: u64,
    /// The known format found there, if any (e.g. "an ext4 filesystem").
    pub signature: Option<&'static str>,
}

impl std::fmt::Display for NotBlank {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.signature {
            Some(s) => write!(f, "it holds {s}"),
            None => write!(
                f,
                "it holds data of no known format (byte {} is not zero)",
                self.first_nonzero
            ),
        }
    }
}

/// `None` when `head` (the device's first bytes, up to [`BLANK_PROBE_BYTES`]) is all zero;
/// otherwise what it holds.
pub fn probe(head: &[u8]) -> Option<NotBlank> {
    let first_nonzero = head.iter().position(|&b| b != 0)? as u64;
    Some(NotBlank {
        first_nonzero,
        signature: signature(head),
    })
}

fn at(head: &[u8], offset: usize, len: usize) -> Option<&[u8]> {
    head.get(offset..offset + len)
}

fn le_u32(head: &[u8], offset: usize) -> u32 {
    at(head, offset, 4).map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// The known format whose signature `head` carries.
fn signature(head: &[u8]) -> Option<&'static str> {
    const EXT_SB: usize = 1024;
    if at(head, EXT_SB + 0x38, 2) == Some(&[0x53, 0xef]) {
        // ext4 sets incompat "extents" (0x40) or "flex_bg" (0x200); ext3 has a journal
        // (compat 0x4); ext2 neither.
        let compat = le_u32(head, EXT_SB + 0x5c);
        let incompat = le_u32(head, EXT_SB + 0x60);
        return Some(if incompat & (0x40 | 0x200) != 0 {
            "an ext4 filesystem"
        } else if compat & 0x4 != 0 {
            "an ext3 filesystem"
        } else {
            "an ext2 filesystem"
        });
    }
    if at(head, 0, 4) == Some(b"XFSB") {
        return Some("an XFS superblock (XFS, or a labfs this build cannot read)");
    }
    if at(head, (64 << 10) + 0x40, 8) == Some(b"_BHRfS_M") {
        return Some("a btrfs filesystem");
    }
    if at(head, 4096 - 10, 10) == Some(b"SWAPSPACE2") {
        return Some("a swap area");
    }
    if at(head, 512, 8) == Some(b"EFI PART") {
        return Some("a GPT partition table");
    }
    if at(head, 510, 2) == Some(&[0x55, 0xaa]) {
        return Some("an MBR partition table or boot sector");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(bytes: &[(usize, &[u8])]) -> Vec<u8> {
        let mut head = vec![0u8; 128 << 10];
        for (offset, b) in bytes {
            head[*offset..offset + b.len()].copy_from_slice(b);
        }
        head
    }

    #[test]
    fn each_known_signature_is_named() {
        let ext = |compat: u32, incompat: u32| {
            with(&[
                (1024 + 0x38, &[0x53, 0xef]),
                (1024 + 0x5c, &compat.to_le_bytes()),
                (1024 + 0x60, &incompat.to_le_bytes()),
            ])
        };
        let name = |h: &[u8]| probe(h).and_then(|p| p.signature).unwrap_or("none");
        assert_eq!(name(&ext(0x4, 0x2c0)), "an ext4 filesystem");
        assert_eq!(name(&ext(0x4, 0x2)), "an ext3 filesystem");
        assert_eq!(name(&ext(0, 0x2)), "an ext2 filesystem");
        assert!(name(&with(&[(0, b"XFSB")])).starts_with("an XFS"));
        assert_eq!(name(&with(&[(0x10040, b"_BHRfS_M")])), "a btrfs filesystem");
        assert_eq!(name(&with(&[(4086, b"SWAPSPACE2")])), "a swap area");
        assert_eq!(
            name(&with(&[(512, b"EFI PART"), (510, &[0x55, 0xaa])])),
            "a GPT partition table"
        );
        assert_eq!(
            name(&with(&[(510, &[0x55, 0xaa])])),
            "an MBR partition table or boot sector"
        );
        assert_eq!(name(&with(&[(300_000 % (128 << 10), b"x")])), "none");
        let other = probe(&with(&[(4000, b"x")])).expect("not blank");
        assert_eq!(other.first_nonzero, 4000);
        assert!(other.to_string().contains("byte 4000"));
        assert_eq!(probe(&with(&[])), None);
    }
}
