//! Watchers on a real directory tree.

use std::os::unix::fs::{symlink, MetadataExt};

use super::*;
use crate::filesystem::sandbox_fs::OwnerNames;

fn fixture() -> (tempfile::TempDir, std::path::PathBuf, SandboxFs) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("home/user")).unwrap();
    let me = std::fs::metadata(&root).unwrap();
    let fs = SandboxFs::new(
        Arc::new(SandboxFs::open_root(&root).unwrap()),
        None,
        OwnerNames::single_user(me.uid(), me.gid()),
    );
    (dir, root, fs)
}

fn req(path: &str, recursive: bool) -> WatchRequest {
    WatchRequest {
        path: path.into(),
        recursive,
        include_entry: false,
    }
}

async fn events_until(live: &mut Live, want: &str, kind: EventType) -> Vec<(String, EventType)> {
    let mut seen = Vec::new();
    let found = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            for e in live.next_batch().await.unwrap() {
                seen.push((e.name.clone(), e.kind));
                if e.name == want && e.kind == kind {
                    return;
                }
            }
        }
    })
    .await;
    assert!(found.is_ok(), "no {kind:?} {want} in {seen:?}");
    seen
}

#[tokio::test]
async fn events_are_named_relative_to_the_watched_directory() {
    let (_d, root, fs) = fixture();
    std::fs::create_dir_all(root.join("home/user/w/sub")).unwrap();
    let sbx = "unit-flat";
    let mut live = Live::new(Tree::open(fs, &req("w", false), sbx).unwrap()).unwrap();
    assert_eq!(usage_of(sbx), (1, 1));
    std::fs::write(root.join("home/user/w/a.txt"), "hi").unwrap();
    let seen = events_until(&mut live, "a.txt", EventType::Write).await;
    assert_eq!(seen[0], ("a.txt".to_string(), EventType::Create));
    std::fs::set_permissions(
        root.join("home/user/w/a.txt"),
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    events_until(&mut live, "a.txt", EventType::Chmod).await;
    std::fs::rename(
        root.join("home/user/w/a.txt"),
        root.join("home/user/w/b.txt"),
    )
    .unwrap();
    let seen = events_until(&mut live, "b.txt", EventType::Create).await;
    assert!(
        seen.contains(&("a.txt".into(), EventType::Rename)),
        "{seen:?}"
    );
    std::fs::remove_file(root.join("home/user/w/b.txt")).unwrap();
    events_until(&mut live, "b.txt", EventType::Remove).await;
    // Not recursive: a file in a subdirectory tells nothing, the next
    // top-level one does.
    std::fs::write(root.join("home/user/w/sub/deep"), "x").unwrap();
    std::fs::write(root.join("home/user/w/c"), "x").unwrap();
    let seen = events_until(&mut live, "c", EventType::Create).await;
    assert!(seen.iter().all(|(n, _)| !n.contains("deep")), "{seen:?}");
    drop(live);
    assert_eq!(usage_of(sbx), (0, 0));
}

#[tokio::test]
async fn recursive_watchers_follow_new_directories_but_not_symlinks() {
    let (_d, root, fs) = fixture();
    let w = root.join("home/user/w");
    std::fs::create_dir_all(w.join("old/er")).unwrap();
    std::fs::create_dir_all(root.join("home/user/outside")).unwrap();
    // A symlink to a directory elsewhere is an entry, not a subtree.
    symlink("../outside", w.join("link")).unwrap();
    let sbx = "unit-recursive";
    let mut live = Live::new(Tree::open(fs, &req("/home/user/w", true), sbx).unwrap()).unwrap();
    assert_eq!(live.tree.watched(), 3, "w, old, old/er");
    std::fs::write(w.join("old/er/f"), "x").unwrap();
    events_until(&mut live, "old/er/f", EventType::Write).await;
    std::fs::write(root.join("home/user/outside/o"), "x").unwrap();
    std::fs::create_dir_all(w.join("new/a/b")).unwrap();
    std::fs::write(w.join("new/a/b/f"), "x").unwrap();
    let seen = events_until(&mut live, "new/a/b/f", EventType::Create).await;
    assert!(seen.iter().all(|(n, _)| !n.starts_with("link")), "{seen:?}");
    assert!(
        seen.contains(&("new".to_string(), EventType::Create)),
        "{seen:?}"
    );
    // Moved away: no longer watched under the old name.
    std::fs::rename(w.join("new"), root.join("home/user/moved")).unwrap();
    events_until(&mut live, "new", EventType::Rename).await;
    std::fs::write(root.join("home/user/moved/a/g"), "x").unwrap();
    std::fs::write(w.join("after"), "x").unwrap();
    let seen = events_until(&mut live, "after", EventType::Create).await;
    assert!(seen.iter().all(|(n, _)| !n.ends_with('g')), "{seen:?}");
    assert_eq!(live.tree.watched(), 3);
}

#[tokio::test]
async fn missing_and_non_directories_are_refused_and_budgets_hold() {
    let (_d, root, fs) = fixture();
    let e = Tree::open(fs.clone(), &req("/nope", false), "unit-budget")
        .err()
        .unwrap();
    assert_eq!(e.code, Code::NotFound);
    assert_eq!(
        e.message,
        "path /nope not found: stat /nope: no such file or directory"
    );
    std::fs::write(root.join("home/user/file"), "x").unwrap();
    let e = Tree::open(fs.clone(), &req("file", false), "unit-budget")
        .err()
        .unwrap();
    assert_eq!(e.code, Code::InvalidArgument);
    assert_eq!(usage_of("unit-budget"), (0, 0));
    let trees: Vec<Tree> = (0..MAX_WATCHERS_PER_SANDBOX)
        .map(|_| Tree::open(fs.clone(), &req("/", false), "unit-budget").unwrap())
        .collect();
    let e = Tree::open(fs.clone(), &req("/", false), "unit-budget")
        .err()
        .unwrap();
    assert_eq!(e.code, Code::ResourceExhausted);
    drop(trees);
    // Watches: a tree wider than a sandbox's budget is refused whole.
    for i in 0..MAX_WATCHES_PER_SANDBOX {
        std::fs::create_dir_all(root.join(format!("tmp/wide/{i}"))).unwrap();
    }
    let e = Tree::open(fs.clone(), &req("/tmp/wide", true), "unit-budget")
        .err()
        .unwrap();
    assert_eq!(e.code, Code::ResourceExhausted, "{}", e.message);
    assert_eq!(usage_of("unit-budget"), (0, 0));
    assert!(Tree::open(fs, &req("/tmp/wide", false), "unit-budget").is_ok());
}

#[test]
fn masks_map_to_envds_event_types() {
    assert_eq!(
        event_types(ReadFlags::MOVED_TO | ReadFlags::ISDIR),
        [EventType::Create]
    );
    assert_eq!(event_types(ReadFlags::MOVE_SELF), [EventType::Rename]);
    assert_eq!(event_types(ReadFlags::DELETE_SELF), [EventType::Remove]);
    assert_eq!(event_types(ReadFlags::ATTRIB), [EventType::Chmod]);
    assert_eq!(event_types(ReadFlags::MODIFY), [EventType::Write]);
    let r: WatchRequest = serde_json::from_value(serde_json::json!({"path": "/x", "recursive": true, "includeEntry": true, "allowNetworkMounts": false})).unwrap();
    assert!(r.recursive && r.include_entry);
}
