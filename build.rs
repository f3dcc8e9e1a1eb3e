//! Generates the hookwire wire code from `proto/` with no system `protoc`:
//! `protox` parses the .proto files in pure Rust and `tonic-prost-build`
//! turns the descriptors into prost messages and tonic clients and servers.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = [
        "proto/hookwire/v1/interceptor.proto",
        "proto/hookwire/v1/approval.proto",
    ];
    for proto in protos {
        println!("cargo:rerun-if-changed={proto}");
    }
    let descriptors = protox::compile(protos, ["proto"])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(descriptors)?;
    Ok(())
}
