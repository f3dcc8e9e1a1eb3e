//! Generates the hookwire wire code from `proto/` with no system `protoc`:
//! `protox` parses the .proto files in pure Rust and `tonic-prost-build`
//! turns the descriptors into prost messages and tonic clients and servers.
//! The encoded descriptor set is also written to `OUT_DIR` for gRPC server
//! reflection (`hookwire::pb::FILE_DESCRIPTOR_SET`).

use prost::Message;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = [
        "proto/hookwire/v1/interceptor.proto",
        "proto/hookwire/v1/approval.proto",
    ];
    for proto in protos {
        println!("cargo:rerun-if-changed={proto}");
    }
    let descriptors = protox::compile(protos, ["proto"])?;
    let out_dir = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(
        out_dir.join("hookwire_descriptor.bin"),
        descriptors.encode_to_vec(),
    )?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(descriptors)?;
    Ok(())
}
