//! The embedding world's bindings as wit-bindgen generates them: the WIT
//! types, the `Guest` traits and the `export!` macro. Apart from the glue
//! ([`super::embedding`]) and the conversions ([`super::convert`]), so
//! neither imports the other for them.
//! The generated bindings need `unsafe`; nothing else here uses it.
#![allow(unsafe_code)]

wit_bindgen::generate!({
    world: "e2b-tools",
    path: "wit",
});
