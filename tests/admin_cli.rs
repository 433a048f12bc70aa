//! The `labfs` admin binary, run as users run it: mkfs refuses to format over what an image
//! holds, check finds flipped bits and wrong link counts (exit 1) and passes clean images
//! (exit 0) without changing them, info prints the geometry, print decodes structures by
//! address and by path, and bad input is one line with exit 2.

mod common;

use std::path::Path;
use std::process::Output;

use assert_cmd::Command;
use fslab::fs::format::ag::{AGF_SECTOR, SB_SECTOR};
use fslab::fs::geo::Geometry;
use fslab::fs::trans::{Resv, Trans};
use fslab::fs::vfs::Owner;

use common::image::{self, Image};

fn labfs(args: &[&str], image: &Path) -> Output {
    let mut cmd = Command::cargo_bin("labfs").expect("the labfs binary");
    let (sub, rest) = args.split_first().expect("a subcommand");
    cmd.arg(sub).arg(image).args(rest);
    cmd.output().expect("runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exited")
}

/// A 64 MiB file image with /d holding three files and two symlinks, /short (inline) and
/// /long (a remote block), unmounted.
fn populated() -> Image {
    let (img, fs) = image::file(64 << 20).mount();
    let root = fs.root().unwrap();
    let d = fs.mkdir(&root, b"d", 0o755).unwrap();
    for name in [&b"a"[..], b"b", b"c"] {
        let (f, _) = fs.create(&d, name, 0o644, true).unwrap();
        fs.write(&f, 0, &[7u8; 10_000]).unwrap();
    }
    fs.symlink(&root, b"short", b"d/a", ROOT).unwrap();
    fs.symlink(&root, b"long", long_target().as_bytes(), ROOT)
        .unwrap();
    drop((d, root));
    fs.unmount().unwrap();
    img
}

const ROOT: Owner = Owner { uid: 0, gid: 0 };

/// A symlink target too long for the inode's literal area.
fn long_target() -> String {
    "d/".repeat(299) + "ab"
}

fn geometry(img: &Image) -> Geometry {
    let fs = img.mount();
    let g = fs.geo;
    fs.unmount().unwrap();
    g
}

#[test]
fn check_passes_a_clean_image_with_exit_0_and_no_output() {
    let img = populated();
    let o = labfs(&["check"], img.path());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
    assert!(
        stderr(&o).contains("clean (7 inodes, 2 directories"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn check_finds_a_flipped_bit_in_a_secondary_superblock_and_changes_nothing() {
    let img = populated();
    let geo = geometry(&img);
    let daddr = geo.ag_header_daddr(2, SB_SECTOR);
    img.flip(daddr.bytes() + 100, 0x08);
    let before = std::fs::read(img.path()).unwrap();
    let o = labfs(&["check"], img.path());
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1, "{out}");
    assert!(
        lines[0].starts_with(&format!(
            "AG 2 superblock (daddr {daddr}): unreadable: sb CRC mismatch at daddr {daddr}"
        )),
        "{out}"
    );
    assert!(stderr(&o).contains("1 problem found"), "{}", stderr(&o));
    assert_eq!(std::fs::read(img.path()).unwrap(), before, "check wrote");
}

#[test]
fn check_finds_a_wrong_link_count_at_its_inode() {
    let img = populated();
    let fs = img.mount();
    let f = fs.lookup_path(b"/d/b").unwrap();
    let ino = f.ino;
    let mut tp = Trans::new(&fs, Resv::Create);
    let ip = tp.lock_inode(f);
    tp.ic_mut(ip).di.nlink = 2;
    tp.log_inode(ip);
    tp.commit().unwrap();
    fs.unmount().unwrap();
    drop(fs);
    let o = labfs(&["check"], img.path());
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        format!("inode {ino}: link count 2, but 1 expected\n")
    );
}

#[test]
fn check_reads_past_a_damaged_primary_superblock_from_a_secondary_copy() {
    let img = populated();
    img.flip(60, 0x01);
    let o = labfs(&["check"], img.path());
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(out.lines().count(), 1, "only the primary is damaged: {out}");
    assert!(
        out.starts_with("primary superblock (AG 0, daddr 0): sb CRC mismatch at daddr 0")
            && out.contains("(the geometry was taken from AG 1's copy)"),
        "{out}"
    );
}

#[test]
fn check_names_a_damaged_agf_that_stops_the_mount() {
    let img = populated();
    let geo = geometry(&img);
    let daddr = geo.ag_header_daddr(1, AGF_SECTOR);
    img.flip(daddr.bytes() + 52, 0x02);
    let o = labfs(&["check"], img.path());
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(
        out.starts_with(&format!(
            "AG 1 AGF (daddr {daddr}): unreadable: agf CRC mismatch at daddr {daddr}: stored "
        )),
        "{out}"
    );
    assert!(
        stderr(&o).contains("cannot be mounted") && stderr(&o).contains("only the AG headers"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn check_refuses_an_image_that_holds_no_labfs_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("blank.img");
    std::fs::write(&path, vec![0u8; 4 << 20]).unwrap();
    let o = labfs(&["check"], &path);
    assert_eq!(code(&o), 2);
    assert_eq!(
        stderr(&o),
        format!(
            "labfs: {}: not a labfs filesystem: the device is blank (no superblock)\n",
            path.display()
        )
    );
    let o = labfs(&["check"], &dir.path().join("missing.img"));
    assert_eq!(code(&o), 2);
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
}

#[test]
fn mkfs_makes_an_image_and_refuses_to_format_over_a_filesystem_or_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.img");
    let o = labfs(&["mkfs"], &path);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("give -s SIZE to create it"),
        "{}",
        stderr(&o)
    );

    let o = labfs(&["mkfs", "-s", "32m", "-o", "agcount=2"], &path);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("agcount=2, agsize=4096 blks"),
        "{}",
        stdout(&o)
    );
    assert_eq!(code(&labfs(&["check"], &path)), 0);
    let uuid = |p: &Path| std::fs::read(p).unwrap()[32..48].to_vec();
    let first = uuid(&path);

    let o = labfs(&["mkfs"], &path);
    assert_eq!(code(&o), 2);
    assert_eq!(
        stderr(&o),
        format!(
            "labfs: {} already holds a labfs filesystem (label \"labfs\"); use -f to overwrite it\n",
            path.display()
        )
    );
    assert_eq!(uuid(&path), first, "the refusal changed nothing");

    let o = labfs(&["mkfs", "-f"], &path);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_ne!(uuid(&path), first, "-f made a new filesystem");

    let data = dir.path().join("data.img");
    let mut bytes = vec![0u8; 8 << 20];
    bytes[70_000] = 1;
    std::fs::write(&data, &bytes).unwrap();
    let o = labfs(&["mkfs"], &data);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o)
            .contains("already holds data that is not a labfs filesystem (byte 70000 is not zero)"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read(&data).unwrap(), bytes);
}

#[test]
fn mkfs_refuses_an_impossible_size_or_geometry_and_leaves_the_path_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.img");

    // Too small for any labfs: a usage error, caught before a file is made.
    let o = labfs(&["mkfs", "-s", "10k"], &path);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        "labfs: invalid value '10k' for '--size <SIZE>': smaller than the 1MiB labfs needs (try --help)\n"
    );
    assert!(!path.exists(), "a refused size made a file");

    // A size that fits labfs but not the groups asked for: refused before the file is made.
    let o = labfs(&["mkfs", "-s", "8m", "-o", "agcount=100"], &path);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("agcount too large"), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    assert!(!path.exists(), "a refused geometry left a file behind");

    // Nor is an existing shorter file extended for a filesystem that cannot be made.
    std::fs::write(&path, vec![0u8; 4 << 20]).unwrap();
    let o = labfs(&["mkfs", "-s", "8m", "-o", "agcount=100"], &path);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 4 << 20);
}

#[test]
fn info_prints_the_geometry_and_every_ag() {
    let img = populated();
    let geo = geometry(&img);
    let o = labfs(&["info"], img.path());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains(&format!(
            "isize=512    agcount={}, agsize={} blks",
            geo.agcount, geo.agblocks
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!("blocks={}, imaxpct=0", geo.dblocks)),
        "{out}"
    );
    assert!(
        out.contains("counters =from the AG headers    inodes=64, free inodes=57"),
        "{out}"
    );
    let rows = out
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("AG"))
        .skip(1)
        .count();
    assert_eq!(rows, geo.agcount as usize, "{out}");

    // A damaged AGI: the row shows "-", the reason follows, and info exits 1.
    let daddr = geo.ag_header_daddr(3, 2);
    img.flip(daddr.bytes() + 20, 0x01);
    let o = labfs(&["info"], img.path());
    assert_eq!(code(&o), 1);
    assert!(
        stdout(&o).contains("AG 3 header unreadable: agi CRC mismatch"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn print_decodes_headers_inodes_and_blocks_by_address_and_path() {
    let img = populated();
    let geo = geometry(&img);
    let o = labfs(&["print", "sb", "1"], img.path());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with(&format!(
        "superblock of AG 1 (daddr {})\nmagicnum = 0x58465342 (\"XFSB\")\n",
        geo.ag_header_daddr(1, SB_SECTOR)
    )));
    assert!(
        out.contains(&format!("agcount = {}\n", geo.agcount)),
        "{out}"
    );
    assert!(
        out.contains("crc = 0x") && out.contains("(correct)"),
        "{out}"
    );

    // By path: the directory's inode (shortform: its entries are in it).
    let o = labfs(&["print", "path", "/d"], img.path());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("mode = 0o40755 (directory)"), "{out}");
    assert!(out.contains("u.sfdir3.hdr.count = 3"), "{out}");
    assert!(out.contains("name \"b\""), "{out}");

    // A file by path, then its inode by number: the same decoding.
    let o = labfs(&["print", "path", "/d/c"], img.path());
    let by_path = stdout(&o);
    assert!(by_path.contains("format = 2 (extents)"), "{by_path}");
    assert!(
        by_path.contains("u.bmx[0] = startoff 0 startblock"),
        "{by_path}"
    );
    let ino: u64 = by_path
        .lines()
        .find_map(|l| l.strip_prefix("ino = "))
        .and_then(|v| v.parse().ok())
        .expect("ino field");
    let o = labfs(&["print", "inode", &ino.to_string()], img.path());
    assert_eq!(stdout(&o), by_path);

    // Symbolic links: a short target in the inode, a long one in its remote block.
    let o = labfs(&["print", "path", "/short"], img.path());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("(symlink)"), "{out}");
    assert!(out.contains("u.symlink = \"d/a\"\n"), "{out}");
    let o = labfs(&["print", "path", "/long"], img.path());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("symlink block of /long: "), "{out}");
    assert!(out.contains("magic = 0x58534c4d (\"XSLM\")"), "{out}");
    assert!(out.contains("bytes = 600\n"), "{out}");
    assert!(
        out.contains(&format!("target = \"{}\"\n", long_target())),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("crc = 0x") && l.ends_with("(correct)")),
        "{out}"
    );

    // The bno tree root by block number (its magic decides), and a header by daddr.
    let o = labfs(&["print", "fsblock", "1"], img.path());
    assert!(stdout(&o).starts_with("bnobt block (fsblock 1, daddr 8, AG 0 block 1)"));
    assert!(
        stdout(&o).contains("recs[1] = startblock "),
        "{}",
        stdout(&o)
    );
    let o = labfs(&["print", "daddr", "1"], img.path());
    assert!(
        stdout(&o).starts_with("AGF of AG 0 (daddr 1)\n"),
        "{}",
        stdout(&o)
    );

    // A damaged block still prints, with its CRC marked bad.
    let agf1 = geo.ag_header_daddr(1, AGF_SECTOR);
    img.flip(agf1.bytes() + 52, 0x01);
    let o = labfs(&["print", "agf", "1"], img.path());
    assert_eq!(code(&o), 0);
    assert!(
        stdout(&o).contains("(bad: the contents give 0x"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn print_refuses_addresses_outside_the_filesystem_and_missing_paths() {
    let img = populated();
    let o = labfs(&["print", "agf", "9"], img.path());
    assert_eq!(code(&o), 2);
    assert_eq!(
        stderr(&o),
        "labfs: AG 9 is beyond the filesystem (it has 4 AGs)\n"
    );
    let o = labfs(&["print", "path", "/d/nope"], img.path());
    assert_eq!(code(&o), 1);
    assert_eq!(stderr(&o), "labfs: /d/nope: no such file or directory\n");
    let o = labfs(&["print", "fsblock", "1", "--type", "nonsense"], img.path());
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("unknown type 'nonsense'"),
        "{}",
        stderr(&o)
    );
    assert_eq!(stderr(&o).lines().count(), 1);
}

#[test]
fn a_closed_stdout_ends_print_quietly() {
    let img = populated();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("labfs"))
        .args(["print"])
        .arg(img.path())
        .args(["path", "/d"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn print_by_path_shows_every_block_of_a_node_form_directory_and_an_extent_tree() {
    let (img, fs) = image::file(64 << 20).mount();
    let root = fs.root().unwrap();
    let d = fs.mkdir(&root, b"big", 0o755).unwrap();
    for i in 0..1500 {
        fs.create(&d, format!("some-file-name-{i:05}").as_bytes(), 0o644, true)
            .unwrap();
    }
    let (f, _) = fs.create(&root, b"fragmented", 0o644, true).unwrap();
    for i in 0..40u64 {
        fs.write(&f, i * 8192, &[1u8; 4096]).unwrap();
        fs.fsync(&f, false).unwrap();
    }
    drop((d, f, root));
    fs.unmount().unwrap();
    drop(fs);

    let o = labfs(&["print", "path", "/big"], img.path());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    let titles: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("directory block "))
        .collect();
    for kind in ["dir3_data", "da3_node", "dir3_leafn", "dir3_free"] {
        assert!(
            titles
                .iter()
                .any(|t| t.contains(&format!(": {kind} block ("))),
            "no {kind} block in {titles:#?}"
        );
    }
    // Every entry is in some data block, once; "." and ".." in block 0.
    let names = out
        .lines()
        .filter(|l| l.contains(" name \"some-file-name-"))
        .count();
    assert_eq!(names, 1500);
    assert!(out.contains("du[64] = inumber "), "{out}");
    assert!(out.contains("name \".\" ftype 2 (dir) tag 64"), "{out}");
    assert!(out.contains("name \"..\" ftype 2 (dir) tag 80"), "{out}");
    assert!(!out.contains("(bad:"), "every CRC is correct");
    assert!(!out.contains("du.error"), "{out}");

    let o = labfs(&["print", "path", "/fragmented"], img.path());
    let out = stdout(&o);
    assert!(out.contains("format = 3 (btree)"), "{out}");
    assert!(out.contains("bmbt block (fsblock "), "{out}");
    let recs = out.lines().filter(|l| l.starts_with("recs[")).count();
    assert_eq!(recs, 40, "one extent per written block: {out}");

    // A block decoded as a kind it is not says so.
    let o = labfs(&["print", "fsblock", "1", "--type", "inobt"], img.path());
    assert!(
        stdout(&o).contains("magic.note = not the inobt magic for this level"),
        "{}",
        stdout(&o)
    );
}
