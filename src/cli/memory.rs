//! The binaries' memory policy: the one process-wide setting every fslab binary makes first.
//!
//! Transparent huge pages are turned off for the process. mimalloc (the binaries' allocator)
//! asks for huge pages on its arenas, and with them about one run in six of
//! `fsmark -S1 -s 4096 -n 20000` on labfs's memory device spent 3-4 s in the kernel zeroing
//! 2 MiB pages (2,400 faults more than a normal run) and ran 10x slower (4-10k files/s
//! instead of 50-60k); a 2M-inode syncbench populate on the memory device took 21-25 s
//! instead of 12 s. With base pages the runs are steady (20,000-file runs within 5% of each
//! other) and the 10M-inode populate keeps 245-250 bytes per cached inode instead of 254-255.
//! A benchmark tool's first duty is the same answer twice, so the policy is fixed here rather
//! than left to the machine's THP setting.

/// Turn transparent huge pages off for this process (`prctl(PR_SET_THP_DISABLE)`), before
/// anything large is allocated. A kernel without the call (before 3.15) keeps its default:
/// the figures above then may vary as described, nothing else changes.
pub fn use_base_pages() {
    // SAFETY: PR_SET_THP_DISABLE takes one integer argument and touches no memory of ours.
    let _ = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
}
