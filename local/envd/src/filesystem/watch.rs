//! Directory watchers: `WatchDir` (a stream) and `CreateWatcher` /
//! `GetWatcherEvents` / `RemoveWatcher` (polled), on inotify, with
//! envd's (fsnotify's) events and names.
//!
//! Every watched directory is a descriptor the files API resolved inside
//! the sandbox's root ([`SandboxFs::open_watched_dir`]); inotify is handed
//! `/proc/self/fd/<n>` (the server's own procfs link to exactly that
//! directory), never a path from the sandbox. A recursive watcher opens
//! each subdirectory as one component of its already-resolved parent,
//! never through a symlink, and skips pseudo-filesystems.
//!
//! A sandbox must not exhaust the host user's inotify limits (128
//! instances by default, shared with everything else the user runs):
//! each watcher is one inotify instance, at most [`MAX_WATCHERS_PER_SANDBOX`]
//! per sandbox and [`MAX_WATCHERS`] in the server, and watches (one per
//! directory, each holding a directory fd) are capped per sandbox and in
//! the server. Watchers stop when their stream closes, on
//! `RemoveWatcher`, and when the sandbox pauses or dies.

use std::collections::{HashMap, VecDeque};
use std::ffi::CString;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};
use std::time::Duration;

use e2b_wire::connect::{Code, ConnectError};
use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
use rustix::io::Errno;
use serde::{Deserialize, Serialize};
use tokio::io::unix::AsyncFd;
use tokio::sync::{oneshot, watch};

use super::entry::Entry;
use super::sandbox_fs::{self, FsErrorKind, SandboxFs};
use crate::connect_rpc::StreamWriter;

/// Watchers (streams and polled) one sandbox may have at once.
pub(crate) const MAX_WATCHERS_PER_SANDBOX: usize = 8;
/// Watchers in the whole server: inotify instances are a per-user host
/// resource (`fs.inotify.max_user_instances`, 128 by default).
pub(crate) const MAX_WATCHERS: usize = 32;
/// Directories one sandbox's watchers watch together.
pub(crate) const MAX_WATCHES_PER_SANDBOX: usize = 1024;
/// Directories the server's watchers watch together (each is an fd too).
pub(crate) const MAX_WATCHES: usize = 4096;
/// Events a polled watcher keeps until they are fetched.
pub(crate) const MAX_PENDING_EVENTS: usize = 10_000;
/// Deepest subdirectory a recursive watcher follows.
const MAX_DEPTH: usize = 64;

/// What fsnotify asks inotify for.
const MASK: WatchFlags = WatchFlags::MOVED_TO
    .union(WatchFlags::MOVED_FROM)
    .union(WatchFlags::CREATE)
    .union(WatchFlags::ATTRIB)
    .union(WatchFlags::MODIFY)
    .union(WatchFlags::MOVE_SELF)
    .union(WatchFlags::DELETE)
    .union(WatchFlags::DELETE_SELF)
    .union(WatchFlags::ONLYDIR);

/// `WatchDirRequest` and `CreateWatcherRequest` (the same fields).
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct WatchRequest {
    /// The directory.
    #[serde(default)]
    pub path: String,
    /// Subdirectories too.
    #[serde(default)]
    pub recursive: bool,
    /// Each event carries the entry's `EntryInfo` when it still exists
    /// (proto3 JSON's `includeEntry`, or the proto name).
    #[serde(default, rename = "includeEntry", alias = "include_entry")]
    pub include_entry: bool,
}

/// `EventType`, by enum name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) enum EventType {
    /// Made (or moved in).
    #[serde(rename = "EVENT_TYPE_CREATE")]
    Create,
    /// Written to.
    #[serde(rename = "EVENT_TYPE_WRITE")]
    Write,
    /// Removed.
    #[serde(rename = "EVENT_TYPE_REMOVE")]
    Remove,
    /// Moved away (or renamed).
    #[serde(rename = "EVENT_TYPE_RENAME")]
    Rename,
    /// Permissions or other attributes changed.
    #[serde(rename = "EVENT_TYPE_CHMOD")]
    Chmod,
}

/// `FilesystemEvent`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct FsEvent {
    /// Path relative to the watched directory.
    pub name: String,
    /// What happened.
    #[serde(rename = "type")]
    pub kind: EventType,
    /// The entry now, when asked for and it still exists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry: Option<Entry>,
}

/// fsnotify's operations of one inotify mask, in envd's order.
fn event_types(mask: ReadFlags) -> Vec<EventType> {
    let mut out = Vec::new();
    if mask.intersects(ReadFlags::CREATE | ReadFlags::MOVED_TO) {
        out.push(EventType::Create);
    }
    if mask.intersects(ReadFlags::MOVE_SELF | ReadFlags::MOVED_FROM) {
        out.push(EventType::Rename);
    }
    if mask.contains(ReadFlags::ATTRIB) {
        out.push(EventType::Chmod);
    }
    if mask.contains(ReadFlags::MODIFY) {
        out.push(EventType::Write);
    }
    if mask.intersects(ReadFlags::DELETE | ReadFlags::DELETE_SELF) {
        out.push(EventType::Remove);
    }
    out
}

// ---------------------------------------------------------------------------
// Budget: watchers and watches per sandbox and in the server.

#[derive(Debug, Default)]
struct Usage {
    watchers: usize,
    watches: usize,
}

#[derive(Debug, Default)]
struct Budget {
    sandboxes: HashMap<String, Usage>,
    total: Usage,
}

static BUDGET: LazyLock<Mutex<Budget>> = LazyLock::new(Mutex::default);

fn budget() -> MutexGuard<'static, Budget> {
    BUDGET.lock().unwrap_or_else(|p| p.into_inner())
}

/// One watcher's share of the budget, given back when dropped.
#[derive(Debug)]
struct Slot {
    sandbox: String,
    watches: usize,
}

impl Slot {
    fn acquire(sandbox: &str) -> Result<Self, ConnectError> {
        let mut b = budget();
        let here = b.sandboxes.get(sandbox).map_or(0, |u| u.watchers);
        if here >= MAX_WATCHERS_PER_SANDBOX {
            return Err(ConnectError::new(
                Code::ResourceExhausted,
                format!("too many directory watchers in this sandbox (at most {MAX_WATCHERS_PER_SANDBOX})"),
            ));
        }
        if b.total.watchers >= MAX_WATCHERS {
            return Err(ConnectError::new(
                Code::ResourceExhausted,
                format!("too many directory watchers on this server (at most {MAX_WATCHERS})"),
            ));
        }
        b.total.watchers += 1;
        b.sandboxes.entry(sandbox.to_string()).or_default().watchers += 1;
        Ok(Self {
            sandbox: sandbox.to_string(),
            watches: 0,
        })
    }

    /// One more watch, if the sandbox and the server may have it.
    fn take_watch(&mut self) -> bool {
        let mut b = budget();
        let here = b.sandboxes.get(&self.sandbox).map_or(0, |u| u.watches);
        if here >= MAX_WATCHES_PER_SANDBOX || b.total.watches >= MAX_WATCHES {
            return false;
        }
        b.total.watches += 1;
        b.sandboxes.entry(self.sandbox.clone()).or_default().watches += 1;
        self.watches += 1;
        true
    }

    fn give_watch(&mut self) {
        if self.watches == 0 {
            return;
        }
        self.watches -= 1;
        let mut b = budget();
        b.total.watches = b.total.watches.saturating_sub(1);
        if let Some(u) = b.sandboxes.get_mut(&self.sandbox) {
            u.watches = u.watches.saturating_sub(1);
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut b = budget();
        b.total.watchers = b.total.watchers.saturating_sub(1);
        b.total.watches = b.total.watches.saturating_sub(self.watches);
        let empty = match b.sandboxes.get_mut(&self.sandbox) {
            Some(u) => {
                u.watchers = u.watchers.saturating_sub(1);
                u.watches = u.watches.saturating_sub(self.watches);
                u.watchers == 0 && u.watches == 0
            }
            None => false,
        };
        if empty {
            b.sandboxes.remove(&self.sandbox);
        }
    }
}

/// Watchers and watches `sandbox` holds now (tests).
#[cfg(test)]
fn usage_of(sandbox: &str) -> (usize, usize) {
    budget()
        .sandboxes
        .get(sandbox)
        .map_or((0, 0), |u| (u.watchers, u.watches))
}

// ---------------------------------------------------------------------------
// The tree of watched directories.

/// One watched directory.
#[derive(Debug)]
struct Watched {
    /// Read-only directory fd (children are opened under it).
    fd: OwnedFd,
    /// Path relative to the watched root (`""` for the root).
    rel: String,
}

/// One raw inotify event.
#[derive(Debug)]
struct Raw {
    wd: i32,
    mask: ReadFlags,
    name: Option<CString>,
}

/// A watcher: one inotify instance over a directory (and, recursive, its
/// subdirectories).
pub(crate) struct Tree {
    inotify: Arc<OwnedFd>,
    dirs: HashMap<i32, Watched>,
    root_wd: i32,
    recursive: bool,
    include_entry: bool,
    /// The watched directory's sandbox path (for entries).
    path: String,
    fs: SandboxFs,
    slot: Slot,
}

/// What [`Tree::add`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Added {
    /// A new watch.
    New(i32),
    /// The directory was watched already (a bind mount of a directory
    /// inside itself must not loop).
    Existing,
    /// The budget is spent.
    Exhausted,
}

/// Why a watcher cannot start or go on.
fn exhausted(path: &str) -> ConnectError {
    ConnectError::new(
        Code::ResourceExhausted,
        format!(
            "too many directories to watch under {path} (a sandbox watches at most {MAX_WATCHES_PER_SANDBOX})"
        ),
    )
}

impl Tree {
    /// Starts watching `req.path` in `fs` for `sandbox` (blocking: a
    /// recursive watcher walks the tree).
    pub fn open(fs: SandboxFs, req: &WatchRequest, sandbox: &str) -> Result<Self, ConnectError> {
        let shown = fs.absolute(&req.path);
        let (fd, clean) = fs.open_watched_dir(&req.path).map_err(|e| match e.kind {
            FsErrorKind::NotFound => ConnectError::new(
                Code::NotFound,
                format!(
                    "path {0} not found: stat {0}: no such file or directory",
                    e.path
                ),
            ),
            FsErrorKind::NotADirectory => ConnectError::new(
                Code::InvalidArgument,
                format!("path {} not a directory", e.path),
            ),
            _ => sandbox_fs::connect_error(e),
        })?;
        let slot = Slot::acquire(sandbox)?;
        let inotify = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC)
            .map(Arc::new)
            .map_err(|e| {
                ConnectError::new(
                    Code::ResourceExhausted,
                    format!("error creating watcher: {}", std::io::Error::from(e)),
                )
            })?;
        let mut tree = Self {
            inotify,
            dirs: HashMap::new(),
            root_wd: -1,
            recursive: req.recursive,
            include_entry: req.include_entry,
            path: clean,
            fs,
            slot,
        };
        let err = |e: Errno| {
            ConnectError::new(
                Code::Internal,
                format!(
                    "error adding path {} to watcher: {}",
                    shown,
                    std::io::Error::from(e)
                ),
            )
        };
        tree.root_wd = match tree.add(fd, String::new()) {
            Ok(Added::New(wd)) => wd,
            Ok(_) => return Err(exhausted(&tree.path)),
            Err(e) => return Err(err(e)),
        };
        if tree.recursive {
            let root = tree.root_wd;
            if !tree.add_subtree(root, None) {
                return Err(exhausted(&tree.path));
            }
        }
        Ok(tree)
    }

    /// Watches the directory `fd` as `rel`.
    fn add(&mut self, fd: OwnedFd, rel: String) -> Result<Added, Errno> {
        if !self.slot.take_watch() {
            return Ok(Added::Exhausted);
        }
        let link = format!("/proc/self/fd/{}", fd.as_raw_fd());
        let wd = match inotify::add_watch(&*self.inotify, link.as_str(), MASK) {
            Ok(wd) => wd,
            Err(e) => {
                self.slot.give_watch();
                return Err(e);
            }
        };
        if self.dirs.contains_key(&wd) {
            self.slot.give_watch();
            return Ok(Added::Existing);
        }
        self.dirs.insert(wd, Watched { fd, rel });
        Ok(Added::New(wd))
    }

    /// Watches every subdirectory under the watched `wd`, breadth first;
    /// with `created`, also reports what is already in them (made before
    /// the watch was: `mkdir -p a/b && touch a/b/f`). False when the budget
    /// ran out.
    fn add_subtree(&mut self, wd: i32, mut created: Option<&mut Vec<(String, EventType)>>) -> bool {
        let mut queue = VecDeque::from([(wd, 0usize)]);
        while let Some((wd, depth)) = queue.pop_front() {
            let Some(dir) = self.dirs.get(&wd) else {
                continue;
            };
            let rel = dir.rel.clone();
            for (name, is_dir) in sandbox_fs::dir_children(&dir.fd) {
                let child_rel = join(&rel, &name);
                if let Some(out) = created.as_deref_mut() {
                    out.push((child_rel.clone(), EventType::Create));
                }
                if !is_dir || depth + 1 >= MAX_DEPTH {
                    continue;
                }
                let Some(dir) = self.dirs.get(&wd) else {
                    break;
                };
                let Some(child) = sandbox_fs::open_watched_child(&dir.fd, &name) else {
                    continue;
                };
                match self.add(child, child_rel) {
                    Ok(Added::New(child_wd)) => queue.push_back((child_wd, depth + 1)),
                    Ok(Added::Existing) | Err(_) => {}
                    Ok(Added::Exhausted) => return false,
                }
            }
        }
        true
    }

    /// Stops watching the subtree at `rel` (moved away: its names would be
    /// wrong; a move back in watches it again).
    fn drop_subtree(&mut self, rel: &str) {
        let prefix = format!("{rel}/");
        let gone: Vec<i32> = self
            .dirs
            .iter()
            .filter(|(_, d)| d.rel == rel || d.rel.starts_with(&prefix))
            .map(|(wd, _)| *wd)
            .collect();
        for wd in gone {
            let _ = inotify::remove_watch(&*self.inotify, wd);
            self.dirs.remove(&wd);
            self.slot.give_watch();
        }
    }

    /// Reads what inotify has (non-blocking): `Ok(empty)` when nothing.
    fn read_raw(&self) -> Result<Vec<Raw>, Errno> {
        let mut buf = vec![MaybeUninit::<u8>::uninit(); 16 << 10];
        let mut reader = inotify::Reader::new(&*self.inotify, &mut buf);
        let mut out = Vec::new();
        loop {
            match reader.next() {
                Ok(ev) => out.push(Raw {
                    wd: ev.wd(),
                    mask: ev.events(),
                    name: ev.file_name().map(|n| n.to_owned()),
                }),
                Err(Errno::AGAIN) if out.is_empty() => return Err(Errno::AGAIN),
                Err(Errno::AGAIN) => return Ok(out),
                Err(e) => return Err(e),
            }
            // Enough for one batch; the rest stays queued.
            if out.len() >= 4096 && reader.is_buffer_empty() {
                return Ok(out);
            }
        }
    }

    /// envd's events for raw inotify events, updating the watched tree.
    fn process(&mut self, raw: Vec<Raw>) -> Result<Vec<FsEvent>, ConnectError> {
        let mut named: Vec<(String, EventType)> = Vec::new();
        for ev in raw {
            if ev.mask.contains(ReadFlags::QUEUE_OVERFLOW) {
                return Err(ConnectError::new(
                    Code::Internal,
                    "watcher error: fsnotify: queue or buffer overflow",
                ));
            }
            if ev.mask.contains(ReadFlags::IGNORED) {
                if self.dirs.remove(&ev.wd).is_some() {
                    self.slot.give_watch();
                }
                continue;
            }
            let Some(dir) = self.dirs.get(&ev.wd) else {
                continue;
            };
            let rel = match &ev.name {
                Some(name) => join(&dir.rel, name),
                // The watched directory itself: only the root's are told
                // (a subdirectory's removal is its parent's event).
                None if ev.wd == self.root_wd => ".".to_string(),
                None => continue,
            };
            named.extend(event_types(ev.mask).into_iter().map(|t| (rel.clone(), t)));
            let is_dir = ev.mask.contains(ReadFlags::ISDIR);
            if !self.recursive || !is_dir {
                continue;
            }
            let Some(name) = &ev.name else {
                continue;
            };
            if ev.mask.contains(ReadFlags::MOVED_FROM) {
                self.drop_subtree(&rel);
            }
            if ev.mask.intersects(ReadFlags::CREATE | ReadFlags::MOVED_TO) {
                let depth = rel.matches('/').count() + 1;
                if depth >= MAX_DEPTH {
                    continue;
                }
                let Some(child) = self
                    .dirs
                    .get(&ev.wd)
                    .and_then(|d| sandbox_fs::open_watched_child(&d.fd, name))
                else {
                    continue;
                };
                let wd = match self.add(child, rel.clone()) {
                    Ok(Added::New(wd)) => wd,
                    Ok(Added::Exhausted) => return Err(exhausted(&self.path)),
                    Ok(Added::Existing) | Err(_) => continue,
                };
                // A new directory may have filled before its watch: tell
                // what is in it. A moved-in one is watched, not told.
                let created = ev.mask.contains(ReadFlags::CREATE);
                let ok = if created {
                    self.add_subtree(wd, Some(&mut named))
                } else {
                    self.add_subtree(wd, None)
                };
                if !ok {
                    return Err(exhausted(&self.path));
                }
            }
        }
        Ok(named
            .into_iter()
            .map(|(name, kind)| {
                let entry = if self.include_entry {
                    self.fs.stat(&format!("{}/{}", self.path, name)).ok()
                } else {
                    None
                };
                FsEvent { name, kind, entry }
            })
            .collect())
    }

    /// How many directories are watched (tests).
    #[cfg(test)]
    fn watched(&self) -> usize {
        self.dirs.len()
    }
}

/// `rel/name` (`name` alone under the root).
fn join(rel: &str, name: &std::ffi::CStr) -> String {
    let name = String::from_utf8_lossy(name.to_bytes());
    if rel.is_empty() {
        name.into_owned()
    } else {
        format!("{rel}/{name}")
    }
}

/// A [`Tree`] on the runtime's reactor.
pub(crate) struct Live {
    ready: AsyncFd<Arc<OwnedFd>>,
    tree: Tree,
}

impl Live {
    /// Registers `tree` with the reactor (inside the runtime).
    #[allow(unsafe_code)]
    pub fn new(tree: Tree) -> std::io::Result<Self> {
        // SAFETY: the registration owns a reference to the inotify fd, so
        // the fd stays open, and the same file, until it is deregistered
        // (when `ready` drops).
        let ready = unsafe {
            AsyncFd::register_with_interest(
                Arc::clone(&tree.inotify),
                tokio::io::Interest::READABLE,
            )
        }
        .map_err(std::io::Error::from)?;
        Ok(Self { ready, tree })
    }

    /// The next events (waits for at least one raw event; may be empty
    /// when those told nothing envd tells).
    pub async fn next_batch(&mut self) -> Result<Vec<FsEvent>, ConnectError> {
        loop {
            let mut guard =
                self.ready.readable().await.map_err(|e| {
                    ConnectError::new(Code::Internal, format!("watcher error: {e}"))
                })?;
            match self.tree.read_raw() {
                Ok(raw) => return self.tree.process(raw),
                Err(Errno::AGAIN) => guard.clear_ready(),
                Err(e) => {
                    return Err(ConnectError::new(
                        Code::Internal,
                        format!("watcher error: {}", std::io::Error::from(e)),
                    ))
                }
            }
        }
    }
}

/// Resolves when the sandbox is gone (paused or dead) or its signal is.
async fn gone(rx: &mut watch::Receiver<bool>) {
    let _ = rx.wait_for(|g| *g).await;
}

// ---------------------------------------------------------------------------
// WatchDir: a stream.

/// Streams `live`'s events to `writer`: `start`, then `filesystem` events
/// and `keepalive`s, until the client goes, the deadline passes or the
/// sandbox goes (the connection is cut, as for process streams).
pub(crate) async fn stream(
    mut live: Live,
    writer: StreamWriter,
    mut gone_rx: watch::Receiver<bool>,
    keepalive: Duration,
    deadline: Option<Duration>,
) {
    if !writer.send(&serde_json::json!({"start": {}})).await {
        return;
    }
    let start = tokio::time::Instant::now();
    let mut tick = tokio::time::interval_at(start + keepalive, keepalive);
    let until = deadline.map(|d| start + d);
    loop {
        let deadline_passed = async {
            match until {
                Some(t) => tokio::time::sleep_until(t).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            batch = live.next_batch() => match batch {
                Ok(events) => {
                    for e in &events {
                        if !writer.send(&serde_json::json!({"filesystem": e})).await {
                            return;
                        }
                    }
                    if !events.is_empty() {
                        tick.reset();
                    }
                }
                Err(e) => return writer.end(Some(e)).await,
            },
            _ = tick.tick() => {
                if !writer.send(&serde_json::json!({"keepalive": {}})).await {
                    return;
                }
            }
            () = writer.closed() => return,
            () = deadline_passed => {
                let e = ConnectError::new(Code::DeadlineExceeded, "context deadline exceeded");
                return writer.end(Some(e)).await;
            }
            () = gone(&mut gone_rx) => return writer.abort().await,
        }
    }
}

// ---------------------------------------------------------------------------
// CreateWatcher / GetWatcherEvents / RemoveWatcher: polled.

#[derive(Debug, Default)]
struct Pending {
    events: Vec<FsEvent>,
    error: Option<ConnectError>,
}

struct Polled {
    pending: Arc<Mutex<Pending>>,
    /// Dropped by `RemoveWatcher`: the watcher's task ends.
    _stop: oneshot::Sender<()>,
}

/// Polled watchers by (sandbox id, watcher id).
static POLLED: LazyLock<Mutex<HashMap<(String, String), Polled>>> = LazyLock::new(Mutex::default);

fn polled() -> MutexGuard<'static, HashMap<(String, String), Polled>> {
    POLLED.lock().unwrap_or_else(|p| p.into_inner())
}

fn lock(p: &Mutex<Pending>) -> MutexGuard<'_, Pending> {
    p.lock().unwrap_or_else(|e| e.into_inner())
}

/// Registers `live` as a polled watcher of `sandbox`; its id.
pub(crate) fn create(live: Live, sandbox: &str, gone_rx: watch::Receiver<bool>) -> String {
    let id = format!("w{:016x}", rand::random::<u64>());
    let key = (sandbox.to_string(), id.clone());
    let pending = Arc::new(Mutex::new(Pending::default()));
    let (stop_tx, stop_rx) = oneshot::channel();
    polled().insert(
        key.clone(),
        Polled {
            pending: Arc::clone(&pending),
            _stop: stop_tx,
        },
    );
    tokio::spawn(collect(live, pending, stop_rx, gone_rx, key));
    id
}

async fn collect(
    live: Live,
    pending: Arc<Mutex<Pending>>,
    mut stop: oneshot::Receiver<()>,
    mut gone_rx: watch::Receiver<bool>,
    key: (String, String),
) {
    // Dropped (inotify closed, budget given back) once it failed.
    let mut live = Some(live);
    loop {
        let next = async {
            match live.as_mut() {
                Some(l) => l.next_batch().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            batch = next => {
                let mut p = lock(&pending);
                match batch {
                    Ok(events) if p.events.len() + events.len() <= MAX_PENDING_EVENTS => {
                        p.events.extend(events);
                    }
                    Ok(_) => {
                        p.error = Some(ConnectError::new(
                            Code::ResourceExhausted,
                            format!("watcher error: more than {MAX_PENDING_EVENTS} events not fetched"),
                        ));
                        live = None;
                    }
                    Err(e) => {
                        p.error = Some(e);
                        live = None;
                    }
                }
            }
            _ = &mut stop => return,
            () = gone(&mut gone_rx) => {
                polled().remove(&key);
                return;
            }
        }
    }
}

fn unknown(id: &str) -> ConnectError {
    ConnectError::new(Code::NotFound, format!("watcher with id {id} not found"))
}

/// The events of watcher `id` of `sandbox` since the last call.
pub(crate) fn take_events(sandbox: &str, id: &str) -> Result<Vec<FsEvent>, ConnectError> {
    let key = (sandbox.to_string(), id.to_string());
    let pending = polled()
        .get(&key)
        .map(|p| Arc::clone(&p.pending))
        .ok_or_else(|| unknown(id))?;
    let mut p = lock(&pending);
    if let Some(e) = &p.error {
        return Err(e.clone());
    }
    Ok(std::mem::take(&mut p.events))
}

/// Stops and forgets watcher `id` of `sandbox`.
pub(crate) fn remove(sandbox: &str, id: &str) -> Result<(), ConnectError> {
    polled()
        .remove(&(sandbox.to_string(), id.to_string()))
        .map(|_| ())
        .ok_or_else(|| unknown(id))
}

#[cfg(test)]
mod tests;
