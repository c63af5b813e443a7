//! The code `build.rs` generates from `proto/sleuth/v1/*.proto`: messages, clients and servers.
//!
//! Layer 4 (docs/architecture.md, *Crates*): generated code only; it depends on no sleuth crate.
#![allow(missing_docs, clippy::all, clippy::pedantic, unreachable_pub)]

tonic::include_proto!("sleuth.v1");

/// The compiled `.proto` files, served by the reflection service so `grpcurl` needs no copy of them.
pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("sleuth_v1_descriptor");
