//! User metadata of files, as envd keeps it: `X-Metadata-<key>: <value>`
//! upload headers become `user.e2b.<key>` extended attributes (keys
//! lowercased), and every `user.e2b.*` attribute of a file or directory
//! shows as `metadata` in its entry info.
//!
//! Attributes are only ever read and written through descriptors the
//! files API resolved inside the sandbox's root ([`super::sandbox_fs`]):
//! an open file, or a directory fd plus one component that is not
//! followed (`l*xattr` on `/proc/self/fd/<dir>/<name>`, the server's own
//! procfs). A sandbox can set any attribute itself, so what is read is
//! bounded like what is written.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::fd::{AsFd, AsRawFd};

use http::HeaderMap;
use rustix::fs::XattrFlags;
use rustix::io::Errno;

/// A file's metadata: key (without the prefix) to value.
pub(crate) type Metadata = BTreeMap<String, String>;

/// The attribute namespace envd's metadata lives in.
pub(crate) const XATTR_PREFIX: &str = "user.e2b.";

/// The upload header prefix (HTTP header names arrive lowercased).
const HEADER_PREFIX: &str = "x-metadata-";

/// Most keys a file carries (uploads with more are refused; reads stop).
pub(crate) const MAX_KEYS: usize = 32;
/// Longest key, in bytes.
pub(crate) const MAX_KEY_LEN: usize = 128;
/// Longest value, in bytes (longer values set out of band are not shown).
pub(crate) const MAX_VALUE_LEN: usize = 1024;
/// Most bytes of keys and values together: ext4 keeps a file's
/// attributes in one 4 KiB block.
pub(crate) const MAX_TOTAL_LEN: usize = 3072;
/// Largest attribute name list read (the kernel's own cap is 64 KiB).
const MAX_LIST_LEN: usize = 16 << 10;

/// The metadata an upload's `X-Metadata-*` headers carry (first value of a
/// repeated header, empty keys dropped, as envd), validated.
pub(crate) fn from_headers(headers: &HeaderMap) -> Result<Metadata, String> {
    let mut out = Metadata::new();
    for name in headers.keys() {
        let Some(key) = name.as_str().strip_prefix(HEADER_PREFIX) else {
            continue;
        };
        if key.is_empty() {
            continue;
        }
        let Some(value) = headers.get(name) else {
            continue;
        };
        let value = value
            .to_str()
            .ok()
            .filter(|v| v.bytes().all(|b| (0x20..=0x7e).contains(&b)))
            .ok_or_else(|| format!("value of key '{key}' is not printable US-ASCII"))?;
        out.insert(key.to_ascii_lowercase(), value.to_string());
    }
    validate(&out)?;
    Ok(out)
}

/// Bounds and characters of metadata to be written.
pub(crate) fn validate(md: &Metadata) -> Result<(), String> {
    if md.len() > MAX_KEYS {
        return Err(format!("{} keys, at most {MAX_KEYS} allowed", md.len()));
    }
    let mut total = 0;
    for (k, v) in md {
        if k.is_empty() || k.len() > MAX_KEY_LEN {
            return Err(format!("key '{k}' must have 1 to {MAX_KEY_LEN} bytes"));
        }
        if !k.bytes().all(is_token_byte) {
            return Err(format!("key '{k}' has characters outside HTTP tokens"));
        }
        if v.len() > MAX_VALUE_LEN {
            return Err(format!(
                "value of key '{k}' is longer than {MAX_VALUE_LEN} bytes"
            ));
        }
        total += k.len() + v.len();
    }
    if total > MAX_TOTAL_LEN {
        return Err(format!(
            "keys and values take {total} bytes, at most {MAX_TOTAL_LEN} allowed"
        ));
    }
    Ok(())
}

/// RFC 7230 `tchar`, lowercase.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Replaces the `user.e2b.*` attributes of the open file `fd` with `md`
/// (keys it lacks are removed; other attributes stay). `Ok(false)` when the
/// filesystem keeps no user attributes (a tmpfs before Linux 6.6): as envd,
/// the content stays written and the metadata is dropped.
pub(crate) fn replace<F: AsFd>(fd: F, md: &Metadata) -> Result<bool, Errno> {
    let fd = fd.as_fd();
    let existing = match list_names(|buf| rustix::fs::flistxattr(fd, buf)) {
        Ok(names) => names,
        Err(e) if unsupported(e) => return Ok(md.is_empty()),
        Err(e) => return Err(e),
    };
    for name in existing {
        let stale = name
            .strip_prefix(XATTR_PREFIX)
            .is_some_and(|k| !md.contains_key(k));
        if stale {
            match rustix::fs::fremovexattr(fd, name.as_str()) {
                Ok(()) | Err(Errno::NODATA) => {}
                Err(e) => return Err(e),
            }
        }
    }
    for (k, v) in md {
        let name = format!("{XATTR_PREFIX}{k}");
        match rustix::fs::fsetxattr(fd, name.as_str(), v.as_bytes(), XattrFlags::empty()) {
            Ok(()) => {}
            Err(e) if unsupported(e) => return Ok(false),
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// The metadata of the open file `fd` (empty when there is none or it
/// cannot be read).
pub(crate) fn read_fd<F: AsFd>(fd: F) -> Metadata {
    let fd = fd.as_fd();
    read_with(
        |buf| rustix::fs::flistxattr(fd, buf),
        |name, buf| rustix::fs::fgetxattr(fd, name, buf),
    )
}

/// The metadata of `name` (one component, not followed) in the directory
/// `dir`; `None` for `dir` itself.
pub(crate) fn read_at<F: AsFd>(dir: F, name: Option<&[u8]>) -> Metadata {
    let mut path = format!("/proc/self/fd/{}", dir.as_fd().as_raw_fd()).into_bytes();
    if let Some(name) = name {
        // A single component: never `/`, `.` or `..` (those are no entries).
        if name.is_empty() || name.contains(&b'/') || name == b"." || name == b".." {
            return Metadata::new();
        }
        path.push(b'/');
        path.extend_from_slice(name);
    }
    let Ok(path) = CString::new(path) else {
        return Metadata::new();
    };
    // The last component is not followed; `/proc/self/fd/<n>` itself is
    // the server's own link to the resolved directory.
    if name.is_some() {
        read_with(
            |buf| rustix::fs::llistxattr(path.as_c_str(), buf),
            |attr, buf| rustix::fs::lgetxattr(path.as_c_str(), attr, buf),
        )
    } else {
        read_with(
            |buf| rustix::fs::listxattr(path.as_c_str(), buf),
            |attr, buf| rustix::fs::getxattr(path.as_c_str(), attr, buf),
        )
    }
}

/// Copies the `user.e2b.*` attributes of `from` to `to` (a cross-mount
/// move); filesystems without user attributes lose them, as `mv` does.
pub(crate) fn copy<F: AsFd, T: AsFd>(from: F, to: T) -> Result<(), Errno> {
    let md = read_fd(from);
    if md.is_empty() {
        return Ok(());
    }
    replace(to, &md).map(|_| ())
}

fn read_with(
    list: impl Fn(&mut [u8]) -> Result<usize, Errno>,
    get: impl Fn(&str, &mut [u8]) -> Result<usize, Errno>,
) -> Metadata {
    let mut out = Metadata::new();
    let Ok(names) = list_names(list) else {
        return out;
    };
    let mut value = vec![0u8; MAX_VALUE_LEN];
    for name in names {
        if out.len() >= MAX_KEYS {
            break;
        }
        let Some(key) = name.strip_prefix(XATTR_PREFIX) else {
            continue;
        };
        if key.is_empty() || key.len() > MAX_KEY_LEN {
            continue;
        }
        // ERANGE: a value longer than any upload may set; not shown.
        if let Ok(n) = get(&name, &mut value) {
            out.insert(
                key.to_string(),
                String::from_utf8_lossy(&value[..n]).into_owned(),
            );
        }
    }
    out
}

/// The attribute names a `listxattr` call gives, at most [`MAX_LIST_LEN`]
/// bytes of them.
fn list_names(list: impl Fn(&mut [u8]) -> Result<usize, Errno>) -> Result<Vec<String>, Errno> {
    let mut buf = vec![0u8; 1024];
    let n = loop {
        match list(&mut buf) {
            Ok(n) => break n,
            Err(Errno::RANGE) if buf.len() < MAX_LIST_LEN => buf.resize(MAX_LIST_LEN, 0),
            Err(e) => return Err(e),
        }
    };
    Ok(buf[..n]
        .split(|b| *b == 0)
        .filter(|n| !n.is_empty())
        .filter_map(|n| std::str::from_utf8(n).ok())
        .map(str::to_string)
        .collect())
}

fn unsupported(e: Errno) -> bool {
    e == Errno::OPNOTSUPP || e == Errno::NOTSUP
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    #[test]
    fn headers_become_lowercase_keys() {
        let md = from_headers(&headers(&[
            ("X-Metadata-Author", "mish"),
            ("x-metadata-purpose", "up load"),
            ("X-Metadata-", "ignored"),
            ("X-Metadata-Twice", "first"),
            ("X-Metadata-Twice", "second"),
            ("Content-Type", "text/plain"),
        ]))
        .unwrap();
        let want: Metadata = [
            ("author", "mish"),
            ("purpose", "up load"),
            ("twice", "first"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(md, want);
    }

    #[test]
    fn bounds_are_enforced() {
        let many: Vec<(String, String)> = (0..=MAX_KEYS)
            .map(|i| (format!("x-metadata-k{i}"), "v".to_string()))
            .collect();
        let pairs: Vec<(&str, &str)> = many.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert!(from_headers(&headers(&pairs)).unwrap_err().contains("keys"));
        let long = "v".repeat(MAX_VALUE_LEN + 1);
        assert!(from_headers(&headers(&[("x-metadata-a", &long)])).is_err());
        let key = format!("x-metadata-{}", "k".repeat(MAX_KEY_LEN + 1));
        assert!(from_headers(&headers(&[(&key, "v")])).is_err());
        let big = "v".repeat(MAX_VALUE_LEN);
        let pairs = [
            ("x-metadata-a", big.as_str()),
            ("x-metadata-b", &big),
            ("x-metadata-c", &big),
        ];
        assert!(from_headers(&headers(&pairs))
            .unwrap_err()
            .contains("bytes"));
        let mut bad = HeaderMap::new();
        bad.insert(
            "x-metadata-a",
            http::HeaderValue::from_bytes(b"caf\xc3\xa9").unwrap(),
        );
        assert!(from_headers(&bad).is_err());
    }

    #[test]
    fn replace_sets_the_whole_set_and_keeps_foreign_attributes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "x").unwrap();
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        let md = |pairs: &[(&str, &str)]| -> Metadata {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        if !replace(&file, &md(&[("author", "mish"), ("purpose", "up")])).unwrap() {
            eprintln!("no user xattrs on {}: skipped", dir.path().display());
            return;
        }
        rustix::fs::fsetxattr(&file, "user.foreign", b"keep", XattrFlags::empty()).unwrap();
        assert_eq!(read_fd(&file), md(&[("author", "mish"), ("purpose", "up")]));
        replace(&file, &md(&[("author", "alice")])).unwrap();
        assert_eq!(read_fd(&file), md(&[("author", "alice")]));
        let parent = std::fs::File::open(dir.path()).unwrap();
        assert_eq!(read_at(&parent, Some(b"f")), md(&[("author", "alice")]));
        assert!(read_at(&parent, Some(b"../f")).is_empty());
        replace(&file, &Metadata::new()).unwrap();
        assert!(read_fd(&file).is_empty());
        let mut v = [0u8; 8];
        assert_eq!(
            rustix::fs::fgetxattr(&file, "user.foreign", &mut v[..]).unwrap(),
            4
        );
    }
}
