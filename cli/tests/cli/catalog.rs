//! `e2b-tools tools`: six tools with usable JSON Schemas.

use crate::binary::{e2b_tools, run};
use serde_json::Value;

const TOOLS: [&str; 6] = [
    "run_code",
    "run_command",
    "write_file",
    "read_file",
    "list_files",
    "start_background_command",
];

#[test]
fn tools_lists_six_tools_with_object_schemas() {
    let out = run(e2b_tools(&["tools"]), "");
    assert_eq!(out.status, 0, "{out:?}");
    let catalog = out.json();
    let tools = catalog.as_array().expect("an array of tools");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names.len(), 6, "{names:?}");
    for name in TOOLS {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    for tool in tools {
        let name = tool["name"].as_str().unwrap_or("?");
        assert!(
            tool["description"].as_str().is_some_and(|d| d.len() > 20),
            "{name} has no description"
        );
        check_object_schema(name, &tool["parameters"]);
    }
}

/// The parts of JSON Schema every function-calling API relies on: an
/// object with typed properties, and `required` naming only properties.
fn check_object_schema(tool: &str, schema: &Value) {
    assert_eq!(schema["type"], "object", "{tool}: {schema}");
    let properties = schema["properties"]
        .as_object()
        .unwrap_or_else(|| panic!("{tool}: no properties in {schema}"));
    for (property, spec) in properties {
        assert!(
            spec.get("type").is_some() || spec.get("enum").is_some(),
            "{tool}.{property} has neither type nor enum: {spec}"
        );
    }
    if let Some(required) = schema.get("required") {
        for name in required.as_array().expect("required is an array") {
            let name = name.as_str().expect("required names are strings");
            assert!(
                properties.contains_key(name),
                "{tool}: required {name} is not a property"
            );
        }
    }
}

#[test]
fn the_shipped_cli_has_no_benchmark() {
    let help = run(e2b_tools(&["--help"]), "");
    assert_eq!(help.status, 0, "{help:?}");
    assert!(!help.stdout.contains("bench"), "{}", help.stdout);
    let bench = run(e2b_tools(&["bench", "--quick"]), "");
    assert_eq!(bench.status, 2, "an unknown subcommand: {bench:?}");
}
