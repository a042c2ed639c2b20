//! Writes the WIT package's documentation as a `package-docs` custom
//! section payload (`$OUT_DIR/package-docs`), the format `wasm-tools` uses
//! and wassette reads its tool descriptions from: wit-bindgen does not emit
//! it. Only the stateless component links it in.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=wit");
    let out =
        PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo")).join("package-docs");
    let mut resolve = wit_parser::Resolve::default();
    let (package, _) = resolve.push_dir("wit").expect("the WIT package parses");
    let docs = wit_parser::PackageMetadata::extract(&resolve, package)
        .encode()
        .expect("the package docs encode");
    std::fs::write(&out, docs).expect("write the package docs");
}
