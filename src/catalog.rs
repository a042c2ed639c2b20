//! The tools as data: e2b-adk's exact descriptions, their arguments as
//! standard JSON Schema (usable by OpenAI, Anthropic, Gemini and MCP), and
//! the system-prompt fragment.

use crate::config::Settings;

/// One tool's description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolSpec {
    /// Name.
    pub name: &'static str,
    /// Description, e2b-adk's text.
    pub description: &'static str,
    /// JSON Schema of the arguments object.
    pub parameters_schema: &'static str,
}

/// The six tools, in e2b-adk's order.
pub const TOOLS: [ToolSpec; 6] = [
    ToolSpec {
        name: "run_code",
        description: "Execute a code snippet inside an isolated E2B sandbox and return its stdout, stderr, the last expression's value, and any runtime error. Use this to actually run and verify code rather than only reasoning about it. Defaults to Python.",
        parameters_schema: r#"{"type":"object","properties":{"code":{"type":"string","description":"The source code to execute in the sandbox."},"language":{"type":"string","enum":["python","javascript","typescript","r","java","bash"],"description":"Language the code is written in. One of: python, javascript, typescript, r, java, bash. Optional; defaults to 'python' when omitted."},"envs":{"type":"object","additionalProperties":{"type":"string"},"description":"Optional environment variables for the execution."},"timeout":{"type":"integer","description":"Optional timeout in seconds for the execution."}},"required":["code"]}"#,
    },
    ToolSpec {
        name: "run_command",
        description: "Run a shell command inside an isolated E2B sandbox and return its stdout, stderr, and exit code. Use this for shell tasks such as installing packages or inspecting the filesystem. cwd and env vars do not persist between calls.",
        parameters_schema: r#"{"type":"object","properties":{"command":{"type":"string","description":"The shell command to run in the sandbox."},"cwd":{"type":"string","description":"Optional working directory for the command."},"envs":{"type":"object","additionalProperties":{"type":"string"},"description":"Optional environment variables for the command."},"timeout":{"type":"integer","description":"Optional timeout in seconds for the command."}},"required":["command"]}"#,
    },
    ToolSpec {
        name: "write_file",
        description: "Write a text file into an isolated E2B sandbox at the given path, creating or overwriting it. Use this to place source files, configs, or data into the sandbox before running them.",
        parameters_schema: r#"{"type":"object","properties":{"path":{"type":"string","description":"Destination path for the file in the sandbox."},"content":{"type":"string","description":"The text content to write to the file."}},"required":["path","content"]}"#,
    },
    ToolSpec {
        name: "read_file",
        description: "Read a text file from an isolated E2B sandbox at the given path and return its content. Use this to inspect files the sandbox produced or that you wrote earlier.",
        parameters_schema: r#"{"type":"object","properties":{"path":{"type":"string","description":"Path of the file to read from the sandbox."}},"required":["path"]}"#,
    },
    ToolSpec {
        name: "list_files",
        description: "List the entries of a directory in an isolated E2B sandbox. Returns each child's name and type (file or dir). Defaults to the current directory. Use this to explore the sandbox filesystem.",
        parameters_schema: r#"{"type":"object","properties":{"path":{"type":"string","description":"Directory to list in the sandbox. Optional; defaults to '.' (the current directory)."}},"required":[]}"#,
    },
    ToolSpec {
        name: "start_background_command",
        description: "Start a long-running command (such as a web/dev server) inside an isolated E2B sandbox and return immediately with its process id. Provide a port to also get a preview URL for the exposed service; the URL is syntactic and readiness is not verified.",
        parameters_schema: r#"{"type":"object","properties":{"command":{"type":"string","description":"The command to start in the background."},"port":{"type":"integer","minimum":1,"maximum":65535,"description":"Optional port the command exposes; when given, a preview URL for that port is returned."},"cwd":{"type":"string","description":"Optional working directory for the command."},"envs":{"type":"object","additionalProperties":{"type":"string"},"description":"Optional environment variables for the command."},"timeout":{"type":"integer","description":"Optional max lifetime in seconds for the background process before the sandbox stops it (E2B default is 60s). Pass a larger value for a long-lived server, or 0 to disable the timeout."}},"required":["command"]}"#,
    },
];

/// A short system-prompt fragment about the tools and the sandbox.
pub fn instructions(settings: &Settings) -> String {
    format!(
        "You have tools that act in one isolated E2B cloud sandbox (a Linux VM, template \
`{template}`), created on first use and kept for this whole session: files, installed \
packages and run_code variables persist across calls (run_command's cwd and env vars do not). \
The home and default working directory is /home/user; relative paths resolve against it. \
Tools: run_code (execute python, javascript, typescript, r, java or bash in a stateful kernel; \
returns stdout, stderr, the last expression's value as text, and any raised error), \
run_command (bash -l -c; returns stdout, stderr, exit_code; default timeout 60 s), \
write_file and read_file (text files), list_files (one directory level), and \
start_background_command (servers and other long-running processes; give a port to get a \
preview URL and a readiness check). Every result has `success`; `success: true` means the tool \
ran, so check `exit_code` and `error` too. Output fields are truncated to {limit} bytes with a \
`…[truncated N bytes]` marker: print summaries rather than huge outputs. The sandbox stops \
{ttl} seconds after the last activity.",
        template = settings.template,
        limit = settings.max_output_bytes,
        ttl = settings.ttl_seconds(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_are_valid_json_schema_objects() {
        for spec in TOOLS {
            let schema: serde_json::Value = serde_json::from_str(spec.parameters_schema).unwrap();
            assert_eq!(schema["type"], "object", "{}", spec.name);
            let props = schema["properties"].as_object().unwrap();
            for required in schema["required"].as_array().unwrap() {
                assert!(props.contains_key(required.as_str().unwrap()));
            }
            for (name, prop) in props {
                assert!(prop["description"].is_string(), "{}.{name}", spec.name);
            }
        }
        let names: Vec<_> = TOOLS.iter().map(|t| t.name).collect();
        assert_eq!(names, crate::args::TOOL_NAMES);
    }

    #[test]
    fn instructions_mention_the_sandbox() {
        let s = Settings::from_env(|_| None);
        let text = instructions(&s);
        assert!(text.contains("/home/user"));
        assert!(text.contains("code-interpreter-v1"));
        assert!(text.contains("10000 bytes"));
    }
}
