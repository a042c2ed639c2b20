//! Integration tests of the local server: every route with its error paths,
//! TTLs, fault injection, and the official Python SDK's conformance scenario.

mod common;
mod conformance;
mod control_plane;
mod envd_files;
mod envd_filesystem;
mod envd_process;
mod escape;
mod faults;
mod ttl;
