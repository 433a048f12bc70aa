//! labfs through FUSE: every VFS operation through the mountpoint with std::fs and libc, the
//! reserved control name, privacy and permissions, and a clean unmount.
//!
//! FUSE tests are ignored unless asked for (`tests/common/fuse.rs` says why).

mod common;

mod kernel_fuse {
    use std::ffi::CString;
    use std::fs::{self, File, OpenOptions};
    use std::io::{Read, Seek, SeekFrom, Write};
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
    use std::os::unix::process::CommandExt;
    use std::path::Path;
    use std::process::Command;

    use super::common::fuse::Mounted;
    use super::common::image::{self, assert_clean};
    use fslab::fs::stats::Stat;
    use fslab::fuse::FuseOptions;

    fn errno_of(e: &std::io::Error) -> i32 {
        e.raw_os_error().unwrap_or(0)
    }

    fn cstr(p: &Path) -> CString {
        CString::new(p.as_os_str().as_bytes()).unwrap()
    }

    #[test]
    #[ignore = "FUSE: needs /dev/fuse and root (cargo test --release -- --ignored kernel_fuse)"]
    fn namespace_operations_work_through_the_mount_and_persist() {
        let m = Mounted::fresh(image::mem(64 << 20));
        fs::create_dir(m.at("d")).unwrap();
        fs::create_dir_all(m.at("d/e/f")).unwrap();
        fs::write(m.at("d/f"), b"hello labfs").unwrap();
        assert_eq!(fs::read(m.at("d/f")).unwrap(), b"hello labfs");
        let long = "t".repeat(700);
        std::os::unix::fs::symlink("d/f", m.at("short")).unwrap();
        std::os::unix::fs::symlink(&long, m.at("long")).unwrap();
        assert_eq!(fs::read_link(m.at("short")).unwrap().to_str(), Some("d/f"));
        assert_eq!(
            fs::read_link(m.at("long")).unwrap().to_str(),
            Some(&long[..])
        );
        assert_eq!(
            fs::read(m.at("short")).unwrap(),
            b"hello labfs",
            "followed by the kernel"
        );
        assert!(
            fs::symlink_metadata(m.at("long"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        fs::hard_link(m.at("d/f"), m.at("d/g")).unwrap();
        assert_eq!(fs::metadata(m.at("d/g")).unwrap().nlink(), 2);
        fs::rename(m.at("d/g"), m.at("h")).unwrap();
        assert_eq!(
            fs::metadata(m.at("d/e")).unwrap().nlink(),
            3,
            "two plus one subdirectory"
        );
        let e = fs::remove_dir(m.at("d/e")).unwrap_err();
        assert_eq!(errno_of(&e), libc::ENOTEMPTY);
        fs::remove_dir(m.at("d/e/f")).unwrap();
        fs::remove_dir(m.at("d/e")).unwrap();
        let mut names: Vec<String> = fs::read_dir(m.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, vec![".labfs", "d", "h", "long", "short"]);
        // rename(2) flags: NOREPLACE is labfs's, EXCHANGE is not. (h and d/f are links to
        // one inode, which the kernel would let pass without asking: use another target.)
        let (a, b) = (cstr(&m.at("h")), cstr(&m.at("long")));
        // SAFETY: both paths are valid NUL-terminated strings.
        let r = unsafe {
            libc::renameat2(
                libc::AT_FDCWD,
                a.as_ptr(),
                libc::AT_FDCWD,
                b.as_ptr(),
                libc::RENAME_NOREPLACE,
            )
        };
        assert_eq!(
            (r, errno_of(&std::io::Error::last_os_error())),
            (-1, libc::EEXIST)
        );
        // SAFETY: as above.
        let r = unsafe {
            libc::renameat2(
                libc::AT_FDCWD,
                a.as_ptr(),
                libc::AT_FDCWD,
                b.as_ptr(),
                libc::RENAME_EXCHANGE,
            )
        };
        assert_eq!(
            (r, errno_of(&std::io::Error::last_os_error())),
            (-1, libc::EINVAL)
        );
        let c = cstr(&m.at("h2"));
        // SAFETY: as above.
        let r = unsafe {
            libc::renameat2(
                libc::AT_FDCWD,
                a.as_ptr(),
                libc::AT_FDCWD,
                c.as_ptr(),
                libc::RENAME_NOREPLACE,
            )
        };
        assert_eq!(r, 0);
        // mknod: regular files yes, special files no (labfs has none).
        // SAFETY: a valid path; mknod only reads it.
        let r = unsafe { libc::mknod(cstr(&m.at("reg")).as_ptr(), libc::S_IFREG | 0o640, 0) };
        assert_eq!(r, 0);
        assert_eq!(fs::metadata(m.at("reg")).unwrap().mode() & 0o7777, 0o640);
        // SAFETY: as above.
        let r = unsafe { libc::mkfifo(cstr(&m.at("fifo")).as_ptr(), 0o600) };
        assert_eq!(
            (r, errno_of(&std::io::Error::last_os_error())),
            (-1, libc::EPERM)
        );

        let img = m.unmount();
        let fs = img.mount();
        assert_clean(&fs, "after a FUSE session");
        let l = fs.lookup_path(b"/long").unwrap();
        assert_eq!(fs.readlink(&l).unwrap(), long.as_bytes());
        let f = fs.lookup_path(b"/h2").unwrap();
        let mut back = vec![0u8; 11];
        fs.read(&f, 0, &mut back).unwrap();
        assert_eq!(back, b"hello labfs");
    }

    #[test]
    #[ignore = "FUSE: needs /dev/fuse and root (cargo test --release -- --ignored kernel_fuse)"]
    fn attributes_truncate_fallocate_statfs_and_xattrs() {
        let m = Mounted::fresh(image::mem(64 << 20));
        let p = m.at("f");
        fs::write(&p, vec![7u8; 10_000]).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o604)).unwrap();
        std::os::unix::fs::chown(&p, Some(1234), Some(567)).unwrap();
        let md = fs::metadata(&p).unwrap();
        assert_eq!((md.mode() & 0o7777, md.uid(), md.gid()), (0o604, 1234, 567));
        let t = std::time::UNIX_EPOCH + std::time::Duration::new(1_000_000_000, 5);
        File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(t)
            .unwrap();
        assert_eq!(fs::metadata(&p).unwrap().mtime(), 1_000_000_000);
        // truncate down and up: the tail reads as zeroes.
        let f = OpenOptions::new().read(true).write(true).open(&p).unwrap();
        f.set_len(100).unwrap();
        f.set_len(5000).unwrap();
        let back = fs::read(&p).unwrap();
        assert_eq!(back.len(), 5000);
        assert!(back[..100].iter().all(|&b| b == 7) && back[100..].iter().all(|&b| b == 0));
        // fallocate: allocate, keep size, punch; unsupported modes are EOPNOTSUPP.
        let fd = std::os::fd::AsRawFd::as_raw_fd(&f);
        // SAFETY: fd is an open descriptor for the whole block.
        unsafe {
            assert_eq!(libc::fallocate(fd, 0, 0, 1 << 20), 0);
            assert_eq!(fs::metadata(&p).unwrap().len(), 1 << 20);
            assert_eq!(
                libc::fallocate(fd, libc::FALLOC_FL_KEEP_SIZE, 1 << 20, 1 << 20),
                0
            );
            assert_eq!(fs::metadata(&p).unwrap().len(), 1 << 20);
            assert!(fs::metadata(&p).unwrap().blocks() >= (2 << 20) / 512);
            let mode = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
            assert_eq!(libc::fallocate(fd, mode, 0, 1 << 20), 0);
            assert_eq!(
                libc::fallocate(fd, libc::FALLOC_FL_COLLAPSE_RANGE, 0, 4096),
                -1
            );
            assert_eq!(errno_of(&std::io::Error::last_os_error()), libc::EOPNOTSUPP);
        }
        drop(f);
        // statfs reports labfs's own figures.
        let st = nix::sys::statvfs::statvfs(&m.path()).unwrap();
        let want = m.fs.statfs();
        assert_eq!(st.block_size(), want.bsize);
        assert_eq!(st.blocks(), want.blocks);
        assert_eq!(st.name_max(), 255);
        assert!(st.blocks_free() <= want.blocks);
        // No extended attributes on labfs.
        // SAFETY: valid path and name; a null buffer of size 0 asks for the length.
        let r = unsafe {
            libc::getxattr(
                cstr(&p).as_ptr(),
                c"user.x".as_ptr(),
                std::ptr::null_mut(),
                0,
            )
        };
        assert_eq!(
            (r, errno_of(&std::io::Error::last_os_error())),
            (-1, libc::EOPNOTSUPP)
        );
        let img = m.unmount();
        assert_clean(&img.mount(), "after attribute changes");
    }

    #[test]
    #[ignore = "FUSE: needs /dev/fuse and root (cargo test --release -- --ignored kernel_fuse)"]
    fn an_unlinked_open_file_lives_until_its_last_close() {
        let m = Mounted::fresh(image::mem(64 << 20));
        let p = m.at("victim");
        let mut f = OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&p)
            .unwrap();
        f.write_all(&vec![1u8; 100_000]).unwrap();
        let free_before = m.fs.statfs().bfree;
        fs::remove_file(&p).unwrap();
        assert!(!p.exists());
        f.seek(SeekFrom::Start(0)).unwrap();
        let mut back = Vec::new();
        f.read_to_end(&mut back).unwrap();
        assert_eq!(back.len(), 100_000, "still readable after unlink");
        assert_eq!(f.metadata().unwrap().nlink(), 0);
        drop(f);
        // The release arrives from the kernel asynchronously to close(2).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while m.fs.statfs().bfree <= free_before && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(m.fs.statfs().bfree > free_before, "freed at the last close");
        let img = m.unmount();
        assert_clean(&img.mount(), "after the unlinked file was freed");
    }

    #[test]
    #[ignore = "FUSE: needs /dev/fuse and root (cargo test --release -- --ignored kernel_fuse)"]
    fn o_direct_writes_reach_the_device_before_returning() {
        let m = Mounted::fresh(image::mem(64 << 20));
        let p = m.at("direct");
        let mut f = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .custom_flags(libc::O_DIRECT)
            .open(&p)
            .unwrap();
        // O_DIRECT wants aligned buffers.
        let layout = std::alloc::Layout::from_size_align(8192, 4096).unwrap();
        // SAFETY: the layout has a non-zero size; the buffer is freed below.
        let buf = unsafe { std::alloc::alloc_zeroed(layout) };
        // SAFETY: buf points at 8192 initialised bytes.
        let data = unsafe { std::slice::from_raw_parts_mut(buf, 8192) };
        data.fill(0xab);
        let pages_before = m.fs.stats.mount().snapshot().get(Stat::XstratQuick);
        f.write_all(data).unwrap();
        // SAFETY: allocated above with this layout.
        unsafe { std::alloc::dealloc(buf, layout) };
        assert!(
            m.fs.stats.mount().snapshot().get(Stat::XstratQuick) > pages_before,
            "the write was allocated and written back at once"
        );
        drop(f);
        assert_eq!(fs::read(&p).unwrap(), vec![0xab; 8192]);

        // O_SYNC: the kernel follows each write with an fsync, which writes back at once.
        let mut f = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .custom_flags(libc::O_SYNC)
            .open(m.at("sync"))
            .unwrap();
        let before = m.fs.stats.mount().snapshot().get(Stat::XstratQuick);
        f.write_all(&[1u8; 4096]).unwrap();
        assert_eq!(
            m.fs.stats.mount().snapshot().get(Stat::XstratQuick),
            before + 1,
            "written back by the O_SYNC write"
        );
    }

    #[test]
    #[ignore = "FUSE: needs /dev/fuse and root (cargo test --release -- --ignored kernel_fuse)"]
    fn the_control_name_is_reserved_in_the_root() {
        let m = Mounted::fresh(image::mem(64 << 20));
        let c = m.at(".labfs");
        assert!(c.is_dir());
        assert_eq!(errno_of(&fs::create_dir(&c).unwrap_err()), libc::EEXIST);
        assert_eq!(errno_of(&fs::remove_dir(&c).unwrap_err()), libc::EPERM);
        assert_eq!(
            errno_of(&fs::rename(&c, m.at("x")).unwrap_err()),
            libc::EPERM
        );
        fs::write(m.at("f"), b"x").unwrap();
        // The kernel refuses a file over a directory itself; a directory reaches labfs.
        assert_eq!(
            errno_of(&fs::rename(m.at("f"), &c).unwrap_err()),
            libc::EISDIR
        );
        fs::create_dir(m.at("e")).unwrap();
        assert_eq!(
            errno_of(&fs::rename(m.at("e"), &c).unwrap_err()),
            libc::EPERM
        );
        assert_eq!(
            errno_of(&fs::write(c.join("new"), b"x").unwrap_err()),
            libc::EACCES
        );
        // Elsewhere the name is ordinary.
        fs::create_dir(m.at("d")).unwrap();
        fs::create_dir(m.at("d/.labfs")).unwrap();
        let img = m.unmount();
        assert_clean(&img.mount(), "after using the reserved name");
    }

    /// Run `cat path` as user `uid`; its exit status and stderr.
    fn cat_as(uid: u32, path: &Path) -> (bool, String) {
        let out = Command::new("cat")
            .arg(path)
            .uid(uid)
            .gid(uid)
            .output()
            .expect("run cat");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    #[test]
    #[ignore = "FUSE: needs /dev/fuse and root (cargo test --release -- --ignored kernel_fuse)"]
    fn a_mount_is_private_unless_allow_other_and_mode_bits_are_enforced() {
        // SAFETY: geteuid cannot fail.
        assert_eq!(
            unsafe { libc::geteuid() },
            0,
            "this test switches users: run it as root"
        );
        let nobody = 65534;
        let m = Mounted::fresh(image::mem(64 << 20));
        fs::write(m.at("public"), b"hi").unwrap();
        let (ok, err) = cat_as(nobody, &m.at("public"));
        assert!(!ok, "another user must not see a private mount: {err}");
        drop(m);

        let opts = FuseOptions {
            allow_other: true,
            ..FuseOptions::default()
        };
        let m = Mounted::mount(image::mem(64 << 20).build(), &opts);
        fs::write(m.at("public"), b"hi").unwrap();
        fs::write(m.at("secret"), b"no").unwrap();
        fs::set_permissions(m.at("secret"), fs::Permissions::from_mode(0o600)).unwrap();
        let (ok, err) = cat_as(nobody, &m.at("public"));
        assert!(ok, "allow_other lets others in: {err}");
        let (ok, err) = cat_as(nobody, &m.at("secret"));
        assert!(
            !ok && err.contains("Permission denied"),
            "default_permissions: {err}"
        );
        // A file another user creates is theirs.
        fs::set_permissions(m.path(), fs::Permissions::from_mode(0o777)).unwrap();
        let out = Command::new("touch")
            .arg(m.at("theirs"))
            .uid(nobody)
            .gid(nobody)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let md = fs::metadata(m.at("theirs")).unwrap();
        assert_eq!((md.uid(), md.gid()), (nobody, nobody));
    }

    #[test]
    #[ignore = "FUSE: needs /dev/fuse and root (cargo test --release -- --ignored kernel_fuse)"]
    fn many_threads_work_in_the_mount_at_once() {
        let m = Mounted::fresh(image::mem(128 << 20));
        let root = m.path();
        std::thread::scope(|s| {
            for t in 0..8 {
                let dir = root.join(format!("t{t}"));
                s.spawn(move || {
                    fs::create_dir(&dir).unwrap();
                    for i in 0..50 {
                        let p = dir.join(format!("f{i}"));
                        fs::write(&p, vec![t as u8; 3000 + i]).unwrap();
                        if i % 3 == 0 {
                            fs::rename(&p, dir.join(format!("r{i}"))).unwrap();
                        }
                        if i % 5 == 0 {
                            File::open(
                                dir.join(format!("{}{i}", if i % 3 == 0 { "r" } else { "f" })),
                            )
                            .unwrap()
                            .sync_all()
                            .unwrap();
                        }
                    }
                });
            }
        });
        for t in 0..8u8 {
            let n = fs::read_dir(root.join(format!("t{t}"))).unwrap().count();
            assert_eq!(n, 50);
            assert_eq!(
                fs::read(root.join(format!("t{t}/f1"))).unwrap(),
                vec![t; 3001]
            );
        }
        let img = m.unmount();
        assert_clean(&img.mount(), "after concurrent work");
    }
}
