//! The kernel's inode slab, from `/proc/slabinfo`: how many inodes the host caches.
//!
//! Thread 002 sized its cache this way (`grep xfs /proc/slabinfo`: `xfs_inode 10528071 ...`).
//! Each filesystem allocates its in-core inodes from its own slab, so the slab to read follows
//! the filesystem type of the run's directory (`statfs(2)`'s `f_type`). `/proc/slabinfo` is
//! readable by root only on most systems; without it the figure is simply absent.

use std::path::Path;

/// The slab cache holding in-core inodes of the filesystem with magic `f_type`, for the
/// filesystems whose slab is known.
pub fn inode_slab_for(f_type: i64) -> Option<&'static str> {
    // The magic numbers of linux/magic.h.
    match f_type {
        0x5846_5342 => Some("xfs_inode"),
        0xEF53 => Some("ext4_inode_cache"),
        0x9123_683E => Some("btrfs_inode"),
        0x0102_1994 => Some("shmem_inode_cache"),
        0x2FC1_2FC1 => Some("zfs_znode_cache"),
        0xF2F5_2010 => Some("f2fs_inode_cache"),
        _ => None,
    }
}

/// `statfs(2)`'s `f_type` of the filesystem holding `path`.
pub fn fs_magic(path: &Path) -> Option<i64> {
    let st = nix::sys::statfs::statfs(path).ok()?;
    #[allow(
        clippy::useless_conversion,
        reason = "f_type's width differs between targets"
    )]
    Some(i64::from(st.filesystem_type().0))
}

/// The active objects of slab `name` in slabinfo text (version 2.x: name, active_objs, ...).
pub fn active_objects(slabinfo: &str, name: &str) -> Option<u64> {
    slabinfo.lines().find_map(|line| {
        let mut fields = line.split_whitespace();
        (fields.next()? == name).then(|| fields.next()?.parse().ok())?
    })
}

/// The inode slab of the filesystem holding `dir`, if it is known and `/proc/slabinfo` is
/// readable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InodeSlab {
    /// The slab's name.
    pub name: &'static str,
}

impl InodeSlab {
    /// The slab for `dir`, if slabinfo can be read and lists it.
    pub fn for_dir(dir: &Path) -> Option<InodeSlab> {
        let name = inode_slab_for(fs_magic(dir)?)?;
        let slab = InodeSlab { name };
        slab.objects().map(|_| slab)
    }

    /// Active objects in the slab now.
    pub fn objects(&self) -> Option<u64> {
        let text = std::fs::read_to_string("/proc/slabinfo").ok()?;
        active_objects(&text, self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
slabinfo - version: 2.1
# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables
xfs_buf 496293 496893 640 51 8 : tunables 0 0 0 : slabdata 9743 9743 0
xfs_inode 10528071 10529150 1728 18 8 : tunables 0 0 0 : slabdata 584999 584999 0
xfs_inode_log_item 3 4 5 6 7 : tunables 0 0 0 : slabdata 1 1 0
";

    #[test]
    fn active_objects_reads_the_named_slab_only() {
        assert_eq!(active_objects(SAMPLE, "xfs_inode"), Some(10_528_071));
        assert_eq!(active_objects(SAMPLE, "xfs_buf"), Some(496_293));
        assert_eq!(active_objects(SAMPLE, "ext4_inode_cache"), None);
        assert_eq!(active_objects("xfs_inode notanumber", "xfs_inode"), None);
    }

    #[test]
    fn slab_names_follow_the_filesystem_magic() {
        assert_eq!(inode_slab_for(0x5846_5342), Some("xfs_inode"));
        assert_eq!(inode_slab_for(0xEF53), Some("ext4_inode_cache"));
        assert_eq!(inode_slab_for(0x1234), None);
    }
}
