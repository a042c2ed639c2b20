//! `call-tool`'s argument layer: any tool name and any bytes as arguments
//! give a parsed call or a clear invalid-argument error, never a panic.
#![no_main]

use e2b_tools::tools::{parse_call, ToolName};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    // Mostly real tool names (to reach the validation), sometimes a name
    // taken from the input itself.
    let (name, args) = match ToolName::ALL.get(usize::from(pick % 10)).map(|t| t.as_str()) {
        Some(name) => (name.to_string(), text.to_string()),
        None => match text.split_once('\u{0}') {
            Some((n, a)) => (n.to_string(), a.to_string()),
            None => (text.to_string(), String::new()),
        },
    };
    if let Err(err) = parse_call(&name, &args) {
        assert!(!err.message.is_empty());
        assert_eq!(
            err.kind,
            e2b_tools::errors::ErrorKind::InvalidArgument,
            "{err:?}"
        );
    }
});
