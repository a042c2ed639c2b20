//! Which tools a session offers. The names are configuration (the
//! `tools` option, `E2B_TOOLS_ENABLED`) resolved before any session
//! exists, so they live here, below the tools; each tool's spec in
//! [`crate::tools`] names its [`ToolName`], and the catalog is derived
//! from those specs.

use crate::errors::ToolError;

/// Declares [`ToolName`], its [`ALL`](ToolName::ALL) and its names from
/// one list, so a tool added to the list is in every one of them.
macro_rules! tool_names {
    ($($(#[$doc:meta])* $variant:ident => $name:literal,)*) => {
        /// A tool, by the name models call it with.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum ToolName {
            $($(#[$doc])* $variant,)*
        }

        impl ToolName {
            /// Every tool, in catalog order.
            pub const ALL: [ToolName; [$($name),*].len()] = [$(ToolName::$variant),*];

            /// The name as models see it.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(ToolName::$variant => $name,)*
                }
            }
        }
    };
}

// e2b-adk's six in its order, then ours. The catalog's order
// (`crate::tools::ALL`) follows this one (a test checks).
tool_names! {
    /// `run_code`.
    RunCode => "run_code",
    /// `run_command`.
    RunCommand => "run_command",
    /// `write_file`.
    WriteFile => "write_file",
    /// `read_file`.
    ReadFile => "read_file",
    /// `list_files`.
    ListFiles => "list_files",
    /// `start_background_command`.
    StartBackgroundCommand => "start_background_command",
    /// `get_background_output` (opt-in).
    GetBackgroundOutput => "get_background_output",
    /// `stop_background_command` (opt-in).
    StopBackgroundCommand => "stop_background_command",
    /// `create_snapshot` (opt-in).
    CreateSnapshot => "create_snapshot",
    /// `fork_sandbox` (opt-in).
    ForkSandbox => "fork_sandbox",
}

impl ToolName {
    /// Its bit in a [`ToolSet`].
    const fn bit(self) -> u32 {
        1 << self as u32
    }

    /// The tool called `name`, `None` for any other name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == name)
    }
}

/// The tools a session offers: listed, described and callable. The rest
/// answer as if unknown, naming the enabled ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolSet(u32);

impl ToolSet {
    /// e2b-adk's six, the default.
    pub const DEFAULT: ToolSet = ToolSet(
        ToolName::RunCode.bit()
            | ToolName::RunCommand.bit()
            | ToolName::WriteFile.bit()
            | ToolName::ReadFile.bit()
            | ToolName::ListFiles.bit()
            | ToolName::StartBackgroundCommand.bit(),
    );
    /// Every tool.
    pub const ALL: ToolSet = ToolSet((1 << ToolName::ALL.len()) - 1);
    /// The tools that need a background process's output kept in the
    /// sandbox (see [`crate::tools::background::script`]).
    const BACKGROUND_CONTROL: ToolSet =
        ToolSet(ToolName::GetBackgroundOutput.bit() | ToolName::StopBackgroundCommand.bit());

    /// Parses a list of names; `default` and `all` stand for those sets.
    /// Empty or unknown names are refused, naming the known ones.
    pub fn parse<S: AsRef<str>>(names: &[S]) -> Result<ToolSet, String> {
        let mut set = ToolSet(0);
        for name in names {
            let name = name.as_ref().trim();
            set.0 |= match name {
                "all" => Self::ALL.0,
                "default" => Self::DEFAULT.0,
                _ => match ToolName::parse(name) {
                    Some(tool) => tool.bit(),
                    None => {
                        return Err(format!(
                            "unknown tool '{name}' (known: {}, or default, all)",
                            ToolName::ALL.map(ToolName::as_str).join(", ")
                        ))
                    }
                },
            };
        }
        if set.0 == 0 {
            return Err("no tool enabled: name at least one".into());
        }
        Ok(set)
    }

    /// Whether `tool` is enabled.
    pub fn contains(self, tool: ToolName) -> bool {
        self.0 & tool.bit() != 0
    }

    /// The enabled tools, in [`ToolName::ALL`]'s order.
    pub fn tools(self) -> impl Iterator<Item = ToolName> {
        ToolName::ALL.into_iter().filter(move |t| self.contains(*t))
    }

    /// Whether tools address a sandbox by id (`sandbox_id`): the fork
    /// tool is enabled, so the session may have more than one.
    pub fn addresses_sandboxes(self) -> bool {
        self.contains(ToolName::ForkSandbox)
    }

    /// Whether background processes are started with their output kept
    /// in the sandbox (a tool that reads or stops them is enabled).
    pub fn controls_background(self) -> bool {
        self.0 & Self::BACKGROUND_CONTROL.0 != 0
    }

    /// `Ok` if `tool` is enabled, else the invalid-argument failure that
    /// names the enabled tools.
    pub fn check(self, tool: ToolName) -> Result<(), ToolError> {
        if self.contains(tool) {
            return Ok(());
        }
        Err(ToolError::invalid(format!(
            "Tool {} is not enabled in this session. Enabled tools: {}",
            tool.as_str(),
            self.names().join(", ")
        )))
    }

    /// The enabled tools' names.
    pub fn names(self) -> Vec<&'static str> {
        self.tools().map(ToolName::as_str).collect()
    }
}

impl Default for ToolSet {
    fn default() -> Self {
        Self::DEFAULT
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors::ErrorKind;

    #[test]
    fn tool_sets_parse_names_and_the_two_shorthands() {
        assert_eq!(ToolSet::parse(&["default"]).unwrap(), ToolSet::DEFAULT);
        assert_eq!(ToolSet::parse(&["all"]).unwrap(), ToolSet::ALL);
        let reader = ToolSet::parse(&["read_file", " list_files"]).unwrap();
        assert_eq!(reader.names(), ["read_file", "list_files"]);
        assert!(!reader.controls_background());
        assert!(!ToolSet::DEFAULT.controls_background());
        assert!(ToolSet::parse(&["get_background_output"])
            .unwrap()
            .controls_background());
        let err = ToolSet::parse(&["read_file", "rm_rf"]).unwrap_err();
        assert!(err.contains("unknown tool 'rm_rf'"), "{err}");
        assert!(ToolSet::parse::<&str>(&[]).is_err());
        let err = reader.check(ToolName::WriteFile).unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidArgument);
        assert_eq!(
            err.message,
            "Tool write_file is not enabled in this session. Enabled tools: read_file, list_files"
        );
    }
}
