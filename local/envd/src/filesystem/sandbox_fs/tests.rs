//! The files API's filesystem on a temporary root (and, for the
//! pseudo-filesystem checks, on the real `/proc` as a root).

use std::io::Read;
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::PathBuf;
use std::sync::mpsc;

use e2b_wire::filesystem::FileType as EntryType;

use super::*;
use std::time::Duration;

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    fs: SandboxFs,
}

impl Fixture {
    /// A root with the sandbox layout, files owned by the current user.
    fn new() -> Self {
        Self::owned_by(None)
    }

    fn owned_by(owner: Option<(u32, u32)>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        for d in ["home/user", "tmp", "var/tmp"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        let me = std::fs::metadata(&root).unwrap();
        let fd = SandboxFs::open_root(&root).unwrap();
        let fs = SandboxFs::new(
            Arc::new(fd),
            owner,
            OwnerNames::single_user(me.uid(), me.gid()),
        );
        Self {
            _dir: dir,
            root,
            fs,
        }
    }

    /// Where sandbox path `p` is on the host.
    fn host(&self, p: &str) -> PathBuf {
        self.root.join(p.trim_start_matches('/'))
    }

    fn read(&self, path: &str) -> Result<Vec<u8>, FsError> {
        let mut opened = self.fs.open_read(path)?;
        let mut buf = Vec::new();
        opened.file.read_to_end(&mut buf).unwrap();
        Ok(buf)
    }
}

fn kind<T: std::fmt::Debug>(r: Result<T, FsError>) -> FsErrorKind {
    r.unwrap_err().kind
}

/// Runs `f` on its own thread and fails instead of hanging.
fn within_seconds<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(10))
        .expect("the operation hung")
}

#[test]
fn writes_and_reads_resolve_envd_style() {
    let fx = Fixture::new();
    fx.fs.write("a.txt", b"hello world").unwrap();
    assert_eq!(
        std::fs::read(fx.host("/home/user/a.txt")).unwrap(),
        b"hello world"
    );
    // Overwriting truncates (after the checks).
    fx.fs.write("~/a.txt", b"bye").unwrap();
    assert_eq!(fx.read("/home/user/a.txt").unwrap(), b"bye");
    assert_eq!(fx.fs.open_read("a.txt").unwrap().size, 3);
    fx.fs.write("/tmp/../tmp/deep/er/f", b"x").unwrap();
    assert_eq!(std::fs::read(fx.host("/tmp/deep/er/f")).unwrap(), b"x");
    let mode = std::fs::metadata(fx.host("/tmp/deep"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o022, 0, "parents are not group/world-writable");
    assert!(matches!(kind(fx.read("missing")), FsErrorKind::NotFound));
    assert!(matches!(kind(fx.read("/tmp")), FsErrorKind::IsADirectory));
    assert!(matches!(
        kind(fx.fs.write("/tmp", b"x")),
        FsErrorKind::IsADirectory
    ));
    // A file where a parent should be.
    let e = fx.fs.write("a.txt/b", b"x").unwrap_err();
    assert!(matches!(e.kind, FsErrorKind::NotADirectory), "{e}");
    assert!(matches!(
        kind(fx.read("bad\0name")),
        FsErrorKind::InvalidPath(_)
    ));
}

#[test]
fn symlinks_resolve_inside_the_root() {
    let fx = Fixture::new();
    symlink("/etc", fx.host("/home/user/escape")).unwrap();
    // The root has no /etc yet: the host's is not reachable.
    assert!(matches!(
        kind(fx.read("escape/passwd")),
        FsErrorKind::NotFound
    ));
    std::fs::create_dir(fx.host("/etc")).unwrap();
    std::fs::write(fx.host("/etc/passwd"), "inside").unwrap();
    assert_eq!(fx.read("escape/passwd").unwrap(), b"inside");
    // Writing through the link lands inside too.
    fx.fs.write("escape/new", b"n").unwrap();
    assert_eq!(std::fs::read(fx.host("/etc/new")).unwrap(), b"n");
    assert!(!std::path::Path::new("/etc/new").exists());
    // `..` cannot climb above the root.
    symlink("../../../../../../..", fx.host("/home/user/up")).unwrap();
    assert_eq!(fx.read("up/etc/passwd").unwrap(), b"inside");
    let names: Vec<String> = fx
        .fs
        .list_dir("up", 1)
        .unwrap()
        .into_iter()
        .map(|e| e.info.name)
        .collect();
    assert_eq!(names, ["etc", "home", "tmp", "var"]);
    // A dangling link is followed when writing, as open(2) does.
    symlink("/tmp/target", fx.host("/home/user/dangling")).unwrap();
    fx.fs.write("dangling", b"t").unwrap();
    assert_eq!(std::fs::read(fx.host("/tmp/target")).unwrap(), b"t");
    symlink("loop", fx.host("/home/user/loop")).unwrap();
    assert!(matches!(
        kind(fx.read("loop")),
        FsErrorKind::TooManySymlinks
    ));
}

#[test]
fn the_servers_proc_is_out_of_reach() {
    let fx = Fixture::new();
    symlink("/proc/self/environ", fx.host("/home/user/env")).unwrap();
    assert!(matches!(kind(fx.read("env")), FsErrorKind::NotFound));
    assert!(matches!(
        kind(fx.read("/proc/self/environ")),
        FsErrorKind::NotFound
    ));
    // A relative link climbing to the host's /proc stays inside as well.
    symlink(
        "../../../../../../../../proc/self/environ",
        fx.host("/tmp/env"),
    )
    .unwrap();
    assert!(matches!(kind(fx.read("/tmp/env")), FsErrorKind::NotFound));
}

#[test]
fn fifos_and_devices_are_refused_without_hanging() {
    let fx = Fixture::new();
    let root = SandboxFs::open_root(&fx.root).unwrap();
    let fifo = Mode::from_raw_mode(0o666);
    rustix::fs::mknodat(&root, "tmp/fifo", FileType::Fifo, fifo, 0).unwrap();
    symlink("/tmp/fifo", fx.host("/home/user/to-fifo")).unwrap();
    let fs = fx.fs.clone();
    let (read, write, via_link) = within_seconds(move || {
        (
            fs.open_read("/tmp/fifo").map(|_| ()),
            fs.write("/tmp/fifo", b"x"),
            fs.write("to-fifo", b"x"),
        )
    });
    for r in [read, write, via_link] {
        let e = r.unwrap_err();
        assert!(matches!(e.kind, FsErrorKind::NotRegular), "{e}");
    }
    let ft = std::fs::symlink_metadata(fx.host("/tmp/fifo"))
        .unwrap()
        .file_type();
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(&ft));
    // A device node, where this process may make one (root, no userns).
    let null = rustix::fs::makedev(1, 3);
    if rustix::fs::mknodat(&root, "tmp/null", FileType::CharacterDevice, fifo, null).is_ok() {
        assert!(matches!(
            kind(fx.read("/tmp/null")),
            FsErrorKind::NotRegular
        ));
        assert!(matches!(
            kind(fx.fs.write("/tmp/null", b"x")),
            FsErrorKind::NotRegular
        ));
    }
}

#[test]
fn kernel_pseudo_filesystems_are_refused() {
    let proc_root = SandboxFs::open_root(std::path::Path::new("/proc")).unwrap();
    let me = std::fs::metadata("/proc/self/status").unwrap();
    let fs = SandboxFs::new(
        Arc::new(proc_root),
        None,
        OwnerNames::single_user(me.uid(), me.gid()),
    );
    for path in ["/self/status", "/self/environ", "/version"] {
        let e = fs.open_read(path).unwrap_err();
        assert!(
            matches!(e.kind, FsErrorKind::PseudoFs("proc")),
            "{path}: {e}"
        );
    }
    let e = fs.write("/self/comm", b"pwned").unwrap_err();
    assert!(matches!(e.kind, FsErrorKind::PseudoFs("proc")), "{e}");
    // Nothing is created in one either.
    let e = fs.write("/new-file", b"x").unwrap_err();
    assert!(matches!(e.kind, FsErrorKind::PseudoFs("proc")), "{e}");
    let e = fs.make_dir("/self/newdir").unwrap_err();
    assert!(matches!(e.kind, FsErrorKind::PseudoFs("proc")), "{e}");
    let e = fs.remove("/self/comm").unwrap_err();
    assert!(matches!(e.kind, FsErrorKind::PseudoFs("proc")), "{e}");
    // Names and stats are fine; the walk does not descend.
    assert!(fs.stat("/version").is_ok());
    let listed = fs.list_dir("/", 3).unwrap();
    assert!(listed.iter().any(|e| e.name == "self"));
    assert!(
        listed.iter().all(|e| e.path.matches('/').count() == 1),
        "descended into /proc"
    );
    // The real root: /proc is a mount point (so never removed), and its
    // magic links lead nowhere.
    let host_root = SandboxFs::open_root(std::path::Path::new("/")).unwrap();
    assert!(meta_at(&host_root, "proc", false).unwrap().mount_root);
    let host = SandboxFs::new(Arc::new(host_root), None, OwnerNames::single_user(0, 0));
    for magic in ["/proc/self/root/etc/hostname", "/proc/self/cwd"] {
        let e = host.open_read(magic).unwrap_err();
        assert!(
            matches!(e.kind, FsErrorKind::TooManySymlinks),
            "{magic}: {e}"
        );
    }
}

#[test]
fn stat_and_list_describe_entries_themselves() {
    let fx = Fixture::new();
    std::fs::create_dir_all(fx.host("/home/user/d/e")).unwrap();
    std::fs::write(fx.host("/home/user/d/a.txt"), "hello").unwrap();
    std::fs::write(fx.host("/home/user/d/e/f"), "").unwrap();
    std::fs::write(fx.host("/tmp/in-tmp"), "").unwrap();
    symlink("/tmp", fx.host("/home/user/d/t")).unwrap();
    symlink("/nowhere", fx.host("/home/user/d/broken")).unwrap();

    let t = fx.fs.stat("d/t").unwrap();
    assert_eq!(t.path, "/home/user/d/t");
    assert_eq!(t.file_type, EntryType::Directory);
    assert_eq!(t.symlink_target.as_deref(), Some("/tmp"));
    assert!(t.permissions.starts_with('L'), "{}", t.permissions);
    let a = fx.fs.stat("d/a.txt").unwrap();
    assert_eq!(
        (a.size, a.owner.as_str(), a.group.as_str()),
        (5, "user", "user")
    );
    assert_eq!(a.file_type, EntryType::File);
    let broken = fx.fs.stat("d/broken").unwrap();
    assert_eq!(broken.file_type, EntryType::File);
    assert_eq!(broken.symlink_target.as_deref(), Some("/nowhere"));
    assert_eq!(fx.fs.stat("/").unwrap().name, "/");
    assert!(matches!(
        kind(fx.fs.stat("d/missing")),
        FsErrorKind::NotFound
    ));
    assert!(matches!(kind(fx.fs.stat("nope/x")), FsErrorKind::NotFound));

    let paths = |depth| -> Vec<String> {
        fx.fs
            .list_dir("d", depth)
            .unwrap()
            .into_iter()
            .map(|e| e.info.path)
            .collect()
    };
    let base = [
        "/home/user/d/a.txt",
        "/home/user/d/broken",
        "/home/user/d/e",
    ];
    assert_eq!(paths(1), [&base[..], &["/home/user/d/t"]].concat());
    // The symlinked directory is listed, not entered.
    assert_eq!(
        paths(2),
        [&base[..], &["/home/user/d/e/f", "/home/user/d/t"]].concat()
    );
    // A symlink as the listed path itself is followed.
    let via_link = fx.fs.list_dir("d/t", 1).unwrap();
    assert_eq!(via_link[0].path, "/home/user/d/t/in-tmp");
    assert!(matches!(
        kind(fx.fs.list_dir("d/a.txt", 1)),
        FsErrorKind::NotADirectory
    ));
    assert!(matches!(
        kind(fx.fs.list_dir("nope", 1)),
        FsErrorKind::NotFound
    ));
    assert!(fx.fs.is_dir("d/t") && fx.fs.is_dir("/") && !fx.fs.is_dir("d/a.txt"));
}

#[test]
fn make_dir_reports_what_is_there() {
    let fx = Fixture::new();
    let made = fx.fs.make_dir("new/deep").unwrap();
    assert_eq!(made.path, "/home/user/new/deep");
    assert_eq!(made.file_type, EntryType::Directory);
    assert!(fx.host("/home/user/new/deep").is_dir());
    assert!(matches!(
        kind(fx.fs.make_dir("new/deep")),
        FsErrorKind::AlreadyExists
    ));
    std::fs::write(fx.host("/home/user/file"), "").unwrap();
    let e = fx.fs.make_dir("file").unwrap_err();
    assert!(matches!(e.kind, FsErrorKind::NotADirectory));
    let e = fx.fs.make_dir("file/sub").unwrap_err();
    assert!(matches!(e.kind, FsErrorKind::NotADirectory));
    assert_eq!(e.path, "/home/user/file");
}

#[test]
fn the_api_acts_as_the_owner() {
    if rustix::process::geteuid().as_raw() != 0 {
        // Only root can act as another user.
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let fx = Fixture::owned_by(Some((4242, 4343)));
    let mode = |p: &str, m: u32| {
        std::fs::set_permissions(fx.host(p), std::fs::Permissions::from_mode(m)).unwrap()
    };
    let owner = rustix::fs::Uid::from_raw(4242);
    rustix::fs::chown(fx.host("/home/user"), Some(owner), None).unwrap();
    mode("/tmp", 0o1777);
    // A root's file the user may write, and a root's directory it may not.
    std::fs::write(fx.host("/home/user/mine"), "").unwrap();
    mode("/home/user/mine", 0o666);
    std::fs::create_dir(fx.host("/etc")).unwrap();
    mode("/etc", 0o755);
    fx.fs.write("x/y/z.txt", b"z").unwrap();
    fx.fs.make_dir("/tmp/m/n").unwrap();
    fx.fs.write("mine", b"overwritten").unwrap();
    let ids = |p: &str| {
        let m = std::fs::symlink_metadata(fx.host(p)).unwrap();
        (m.uid(), m.gid())
    };
    for p in [
        "/home/user/x",
        "/home/user/x/y",
        "/home/user/x/y/z.txt",
        "/tmp/m",
        "/tmp/m/n",
    ] {
        assert_eq!(ids(p), (4242, 4343), "{p}");
    }
    // What existed keeps its owner.
    assert_eq!(ids("/home/user/mine").0, 0);
    // Where the user's permissions stop, so does the API, and nothing is made.
    for e in [
        fx.fs.write("/etc/x.txt", b"x").unwrap_err(),
        fx.fs.make_dir("/etc/d").unwrap_err(),
    ] {
        assert!(matches!(e.kind, FsErrorKind::PermissionDenied), "{e}");
    }
    assert_eq!(std::fs::read_dir(fx.host("/etc")).unwrap().count(), 0);
    // The thread is envd's own again afterwards.
    std::fs::write(fx.host("/etc/root-made"), "").unwrap();
}

#[test]
fn rename_and_remove_act_on_entries_themselves() {
    let fx = Fixture::new();
    std::fs::create_dir_all(fx.host("/home/user/d/sub")).unwrap();
    std::fs::write(fx.host("/home/user/d/a.txt"), "hello").unwrap();
    std::fs::write(fx.host("/home/user/d/sub/b"), "").unwrap();
    let moved = fx.fs.rename("d/a.txt", "/tmp/moved/b.txt").unwrap();
    assert_eq!(moved.path, "/tmp/moved/b.txt");
    assert_eq!(
        std::fs::read(fx.host("/tmp/moved/b.txt")).unwrap(),
        b"hello"
    );
    let e = fx.fs.rename("gone", "x").unwrap_err();
    assert!(matches!(e.kind, FsErrorKind::NotFound));
    assert_eq!(e.path, "/home/user/gone");
    for p in MOUNT_POINTS {
        assert!(
            matches!(kind(fx.fs.remove(p)), FsErrorKind::ReadOnly),
            "{p}"
        );
        assert!(
            matches!(kind(fx.fs.rename(p, "/x")), FsErrorKind::ReadOnly),
            "{p}"
        );
    }
    assert!(matches!(
        kind(fx.fs.rename("d", "/tmp")),
        FsErrorKind::ReadOnly
    ));

    // A symlink goes, not what it points to.
    symlink("/home/user/d", fx.host("/tmp/link")).unwrap();
    fx.fs.rename("/tmp/link", "/tmp/link2").unwrap();
    assert!(std::fs::symlink_metadata(fx.host("/tmp/link2"))
        .unwrap()
        .is_symlink());
    fx.fs.remove("/tmp/link2").unwrap();
    assert!(fx.host("/home/user/d/sub/b").exists());
    fx.fs.remove("d").unwrap();
    assert!(!fx.host("/home/user/d").exists());
    // Gone already, or never there (parent too): removed, as on E2B.
    fx.fs.remove("d").unwrap();
    fx.fs.remove("/home/user/never/there").unwrap();
    // Something in the way is still an error.
    std::fs::write(fx.host("/home/user/f"), "x").unwrap();
    assert!(matches!(
        kind(fx.fs.remove("/home/user/f/x")),
        FsErrorKind::NotADirectory
    ));
}

#[test]
fn a_move_across_mounts_copies_then_removes() {
    let fx = Fixture::new();
    let src = fx.host("/home/user/src");
    std::fs::create_dir_all(src.join("sub")).unwrap();
    std::fs::write(src.join("f"), "data").unwrap();
    std::fs::set_permissions(src.join("f"), std::fs::Permissions::from_mode(0o4750)).unwrap();
    std::fs::write(src.join("sub/g"), "g").unwrap();
    symlink("f", src.join("link")).unwrap();
    std::fs::write(fx.host("/tmp/old"), "replaced").unwrap();

    let root = SandboxFs::open_root(&fx.root).unwrap();
    let sdir = rustix::fs::openat(&root, "home/user", DIR_PATH, Mode::empty()).unwrap();
    let ddir = rustix::fs::openat(&root, "tmp", DIR_PATH, Mode::empty()).unwrap();
    let meta = meta_at(&sdir, "src", false).unwrap();
    move_by_copy(
        &sdir,
        "src",
        &meta,
        &ddir,
        "dst",
        "/home/user/src",
        "/tmp/dst",
    )
    .unwrap();
    assert!(!src.exists());
    let dst = fx.host("/tmp/dst");
    assert_eq!(std::fs::read(dst.join("f")).unwrap(), b"data");
    let mode = std::fs::metadata(dst.join("f"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o7777, 0o750, "set-id bits are dropped");
    assert_eq!(std::fs::read(dst.join("sub/g")).unwrap(), b"g");
    assert_eq!(
        std::fs::read_link(dst.join("link")).unwrap(),
        PathBuf::from("f")
    );

    // An existing file is replaced; a directory by a file is refused.
    std::fs::write(fx.host("/home/user/new"), "new").unwrap();
    let meta = meta_at(&sdir, "new", false).unwrap();
    move_by_copy(
        &sdir,
        "new",
        &meta,
        &ddir,
        "old",
        "/home/user/new",
        "/tmp/old",
    )
    .unwrap();
    assert_eq!(std::fs::read(fx.host("/tmp/old")).unwrap(), b"new");
    std::fs::write(fx.host("/home/user/file"), "").unwrap();
    let meta = meta_at(&sdir, "file", false).unwrap();
    let e = move_by_copy(
        &sdir,
        "file",
        &meta,
        &ddir,
        "dst",
        "/home/user/file",
        "/tmp/dst",
    )
    .unwrap_err();
    assert!(matches!(e.kind, FsErrorKind::IsADirectory), "{e}");
    assert!(fx.host("/home/user/file").exists());
}

#[test]
fn owners_are_named_as_inside_the_sandbox() {
    let inside = OwnerNames::inside();
    assert_eq!(inside.owner(0), "root");
    assert_eq!(inside.owner(1000), "user");
    assert_eq!(inside.group(5), "5");
    assert_eq!(inside.owner(65_534), "nobody");
    let own = OwnerNames::single_user(1234, 99);
    assert_eq!(
        (own.owner(1234), own.group(99)),
        ("user".into(), "user".into())
    );
    assert_eq!(own.owner(0), "nobody");
}
