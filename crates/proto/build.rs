//! Generates the cluster's gRPC code from the repository's `proto/` at build time.

/// The gRPC services and messages of `proto/sleuth/v1/`, compiled with the `protoc` that
/// `protoc-bin-vendored` ships (a fresh machine needs no protoc installed), plus the file descriptor
/// set the reflection service serves so `grpcurl` works without the .proto files.
fn main() {
    let files = [
        "../../proto/sleuth/v1/sweeps.proto",
        "../../proto/sleuth/v1/workers.proto",
    ];
    for f in files {
        println!("cargo:rerun-if-changed={f}");
    }
    let protoc = protoc_bin_vendored::protoc_bin_path()
        .expect("protoc-bin-vendored has a protoc for this platform");
    let mut config = tonic_prost_build::Config::new();
    config.protoc_executable(protoc);
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    tonic_prost_build::configure()
        .file_descriptor_set_path(out.join("sleuth_v1_descriptor.bin"))
        .compile_with_config(config, &files, &["../../proto"])
        .expect("compile proto/sleuth/v1");
}
