//! A process's `/proc/PID/stat`, read once here for every module that
//! asks about a process (is it alive, its parent, when it started).

use std::path::Path;

/// The fields of `stat` in the process directory `proc` (`/proc/PID`)
/// after the command name, which may hold spaces and parentheses: `[0]` is
/// the state, `[1]` the parent's pid, `[19]` the start time in clock ticks
/// after boot. `None` when there is no such process.
pub(crate) fn stat_fields(proc: &Path) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(proc.join("stat")).ok()?;
    let (_, after_name) = stat.rsplit_once(')')?;
    Some(after_name.split_whitespace().map(String::from).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_its_parent_and_start_are_known() {
        let fields = stat_fields(Path::new("/proc/self")).unwrap();
        // The process (its main thread may sleep): alive, not a zombie.
        assert!(["R", "S", "D"].contains(&fields[0].as_str()), "{fields:?}");
        assert_eq!(fields[1], std::os::unix::process::parent_id().to_string());
        assert!(fields[19].parse::<u64>().is_ok());
        assert_eq!(stat_fields(Path::new("/proc/no-such-process")), None);
    }

    #[test]
    fn a_name_with_spaces_and_parentheses_does_not_shift_the_fields() {
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("a) (b c");
        std::fs::copy("/bin/sleep", &program).unwrap();
        let mut child = std::process::Command::new(&program)
            .arg("30")
            .spawn()
            .unwrap();
        let fields = stat_fields(Path::new(&format!("/proc/{}", child.id())));
        let _ = child.kill();
        let _ = child.wait();
        let fields = fields.unwrap();
        assert_eq!(fields[1], std::process::id().to_string(), "{fields:?}");
    }
}
