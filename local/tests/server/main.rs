//! Integration tests of the local server: every route with its error paths,
//! TTLs, fault injection, and the official Python and JavaScript SDKs'
//! conformance scenarios.

mod boundary;
mod common;
mod concurrency;
mod conformance;
mod conformance_js;
mod control_plane;
mod envd_files;
mod envd_filesystem;
mod envd_process;
mod envd_watch;
mod escape;
mod faults;
mod host_boundary;
mod processes;
mod redteam;
mod restart;
mod snapshots;
mod templates;
mod ttl;
