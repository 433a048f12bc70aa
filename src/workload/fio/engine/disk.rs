//! fio's "Disk stats" for host directories: the block device under each job's files, read
//! from `/sys/dev/block/MAJ:MIN/stat` before and after the run (`diskutil.c`).
//!
//! A directory on tmpfs (or any filesystem without a block device) has no disk, and fio then
//! prints no "Disk stats" block; neither does fiolike. A partition is reported as its disk,
//! as fio does.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::workload::fio::stats::DiskUtil;

/// The sysfs directory of the disk holding `path`, if it is on a block device.
pub fn disk_dir(path: &Path) -> Option<PathBuf> {
    let mut p = path;
    let meta = loop {
        match std::fs::metadata(p) {
            Ok(m) => break m,
            Err(_) => p = p.parent()?,
        }
    };
    use std::os::unix::fs::MetadataExt;
    let dev = meta.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    if major == 0 {
        return None;
    }
    let dir = std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")).ok()?;
    if dir.join("partition").exists() {
        return dir.parent().map(Path::to_path_buf);
    }
    Some(dir)
}

#[derive(Debug, Clone, Copy, Default)]
struct Counters {
    ios: [u64; 2],
    merges: [u64; 2],
    ticks: [u64; 2],
    io_ticks: u64,
    in_queue: u64,
}

fn read_counters(dir: &Path) -> Option<Counters> {
    let text = std::fs::read_to_string(dir.join("stat")).ok()?;
    let f: Vec<u64> = text
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    if f.len() < 11 {
        return None;
    }
    Some(Counters {
        ios: [f[0], f[4]],
        merges: [f[1], f[5]],
        ticks: [f[3], f[7]],
        io_ticks: f[9],
        in_queue: f[10],
    })
}

/// The disks under a run's files and their counters at the start.
#[derive(Debug)]
pub struct DiskWatch {
    disks: Vec<(String, PathBuf, Counters)>,
    started: Instant,
}

impl DiskWatch {
    /// Start watching the disks under `paths` (duplicates once).
    pub fn start<'a>(paths: impl IntoIterator<Item = &'a Path>) -> DiskWatch {
        let mut disks: Vec<(String, PathBuf, Counters)> = Vec::new();
        for p in paths {
            let Some(dir) = disk_dir(p) else {
                continue;
            };
            if disks.iter().any(|(_, d, _)| *d == dir) {
                continue;
            }
            let Some(c) = read_counters(&dir) else {
                continue;
            };
            let name = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            disks.push((name, dir, c));
        }
        DiskWatch {
            disks,
            started: Instant::now(),
        }
    }

    /// The counters' change since the start.
    pub fn finish(&self) -> Vec<DiskUtil> {
        let msec = self.started.elapsed().as_millis() as u64;
        self.disks
            .iter()
            .filter_map(|(name, dir, a)| {
                let b = read_counters(dir)?;
                let d = |x: u64, y: u64| y.saturating_sub(x);
                Some(DiskUtil {
                    name: name.clone(),
                    ios: [d(a.ios[0], b.ios[0]), d(a.ios[1], b.ios[1])],
                    merges: [d(a.merges[0], b.merges[0]), d(a.merges[1], b.merges[1])],
                    ticks: [d(a.ticks[0], b.ticks[0]), d(a.ticks[1], b.ticks[1])],
                    in_queue: d(a.in_queue, b.in_queue),
                    io_ticks: d(a.io_ticks, b.io_ticks),
                    msec,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tmpfs_has_no_disk_and_a_block_device_does() {
        if Path::new("/dev/shm").exists() {
            assert_eq!(disk_dir(Path::new("/dev/shm/nonexistent/file")), None);
        }
        // /proc is not on a block device either.
        assert_eq!(disk_dir(Path::new("/proc/self")), None);
        let w = DiskWatch::start([Path::new("/proc")]);
        assert!(w.finish().is_empty());
    }
}
