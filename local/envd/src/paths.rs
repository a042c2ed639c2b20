//! Paths as envd takes them from clients: [`absolutize`], then [`clean`].
//! Resolving them is the kernel's job, beneath the sandbox's root
//! ([`crate::filesystem::sandbox_fs`]).

/// Makes `path` absolute the way envd does for a user whose home is
/// `home`: empty → home, `~` → home, relative → joined to home. The
/// result is not yet cleaned.
pub fn absolutize(path: &str, home: &str) -> String {
    if path.is_empty() || path == "~" {
        home.to_string()
    } else if let Some(rest) = path.strip_prefix("~/") {
        format!("{home}/{rest}")
    } else if path.starts_with('/') {
        path.to_string()
    } else {
        format!("{home}/{path}")
    }
}

/// Cleans an absolute path lexically (`.`/`..`/duplicate slashes).
pub fn clean(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            p => out.push(p),
        }
    }
    format!("/{}", out.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_absolutized_and_cleaned_as_envd_does() {
        let full = |p: &str| clean(&absolutize(p, "/home/user"));
        assert_eq!(full(""), "/home/user");
        assert_eq!(full("~"), "/home/user");
        assert_eq!(full("~/a//b/"), "/home/user/a/b");
        assert_eq!(full("a.txt"), "/home/user/a.txt");
        assert_eq!(full("/tmp/../tmp/./b"), "/tmp/b");
        assert_eq!(full("/home/user/../../../home/user/x"), "/home/user/x");
        assert_eq!(full("/.."), "/");
        // Root's relative paths start at its own home.
        assert_eq!(clean(&absolutize("a/../b", "/root")), "/root/b");
        assert_eq!(clean(&absolutize("~", "/root")), "/root");
    }
}
