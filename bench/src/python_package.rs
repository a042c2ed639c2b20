//! (10) The Python package's cold start (`bindings/python`): `import
//! e2b_tools`, loading the component and the first tool call in a fresh
//! process, the compile cache warm and cold, next to `import e2b_adk`
//! alone; medians of fresh processes, measured by the package's own
//! `bench_cold_start.py` against this run's local server.

use super::*;

/// The script, from the source tree (it imports the installed package).
const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../bindings/python/bench_cold_start.py"
);

/// The script's answer, or why it did not run.
pub(crate) enum PythonPackageRow {
    Measured(Value),
    NotRun(String),
}

pub(crate) async fn python_package_cold_start(
    plan: &Plan,
    env: &BTreeMap<String, String>,
    package_python: &Path,
    adk_python: &Path,
    report: &mut Report,
) -> Result<(), Failure> {
    if !package_python.exists() {
        report.python_package = Some(PythonPackageRow::NotRun(format!(
            "no Python with the package at {} (`python3 -m venv target/package-venv && \
             target/package-venv/bin/pip install dist/e2b_tools-*.whl` after `scripts/dist`)",
            package_python.display()
        )));
        return Ok(());
    }
    let mut script = Command::new(package_python);
    script
        .arg(SCRIPT)
        .args(["--runs", &plan.cold_runs.to_string()])
        .arg("--adk-python")
        .arg(adk_python)
        .envs(env);
    let value = json_child(script, "bench_cold_start.py").await?;
    report.python_package = Some(PythonPackageRow::Measured(value));
    Ok(())
}

impl PythonPackageRow {
    pub(crate) fn markdown(&self, out: &mut String) {
        let _ = writeln!(out, "\n## 10. The Python package's cold start\n");
        let value = match self {
            PythonPackageRow::NotRun(why) => {
                let _ = writeln!(out, "Not run: {why}.");
                return;
            }
            PythonPackageRow::Measured(value) => value,
        };
        let _ = writeln!(
            out,
            "`bindings/python/bench_cold_start.py`: in a fresh process each, `import \
             e2b_tools`, loading the component and the first tool call (`run_command` of \
             `true`, which creates the sandbox), with the compile cache warm and cold; next \
             to `import e2b_adk` alone (e2b-adk 0.1.2, in its own venv). Medians of {} \
             processes; Python {}, wasmtime-py {}.\n",
            value["runs"],
            value["python"].as_str().unwrap_or("?"),
            value["wasmtime"].as_str().unwrap_or("?")
        );
        let field = |case: &str, key: &str| match value[case][key].as_f64() {
            Some(ms) => format!("{ms:.0} ms"),
            None => "–".to_string(),
        };
        let _ = writeln!(
            out,
            "| case | import | load | first call | import + load + first call | whole process |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|---|");
        for (name, case) in [
            ("e2b-tools, cache warm", "warm"),
            ("e2b-tools, cache cold", "cold"),
            ("`import e2b_adk` alone", "e2b_adk_import"),
        ] {
            let _ = writeln!(
                out,
                "| {name} | {} | {} | {} | {} | {} |",
                field(case, "import_ms"),
                field(case, "load_ms"),
                field(case, "first_call_ms"),
                field(case, "total_ms"),
                field(case, "process_ms"),
            );
        }
        if let (Some(warm), Some(adk)) = (
            value["warm"]["total_ms"].as_f64(),
            value["e2b_adk_import"]["import_ms"].as_f64(),
        ) {
            let _ = writeln!(
                out,
                "\nWith the cache warm, importing the package, loading the component and \
                 making the first call takes {:.2}× the time of importing e2b-adk alone.",
                warm / adk
            );
        }
    }
}
