//! labfs through FUSE: the VFS surface with std::fs, the control directory, permissions.

mod support;

use std::os::unix::fs::{MetadataExt, PermissionsExt};

use support::Mounted;

#[test]
fn files_directories_and_links_work_through_the_mount() {
    let m = Mounted::fresh(64 << 20);
    std::fs::create_dir(m.at("d")).unwrap();
    std::fs::write(m.at("d/f"), b"hello labfs").unwrap();
    assert_eq!(std::fs::read(m.at("d/f")).unwrap(), b"hello labfs");
    std::os::unix::fs::symlink("d/f", m.at("l")).unwrap();
    assert_eq!(std::fs::read_link(m.at("l")).unwrap().to_str(), Some("d/f"));
    assert_eq!(
        std::fs::read(m.at("l")).unwrap(),
        b"hello labfs",
        "the kernel follows it"
    );
    std::fs::hard_link(m.at("d/f"), m.at("d/g")).unwrap();
    assert_eq!(std::fs::metadata(m.at("d/g")).unwrap().nlink(), 2);
    std::fs::rename(m.at("d/g"), m.at("h")).unwrap();
    let mut names: Vec<String> = std::fs::read_dir(m.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, vec![".labfs", "d", "h", "l"]);
    std::fs::set_permissions(m.at("h"), std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(std::fs::metadata(m.at("h")).unwrap().mode() & 0o7777, 0o600);
    let stats = std::fs::read_to_string(m.at(".labfs/stats/stats")).unwrap();
    assert!(stats.starts_with("extent_alloc "), "{stats}");
    let dev = m.unmount();
    let fs = fslab::fs::Fs::mount(dev, fslab::fs::options::Options::default().mount).unwrap();
    let r = fslab::fs::check::check(&fs).unwrap();
    assert!(r.is_clean(), "{:#?}", r.findings);
}
