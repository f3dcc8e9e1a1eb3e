//! The check that the checked-in wire code (`src/pb/`) is what
//! `proto/hookwire/v1` generates today: `protox` parses the .proto files
//! in pure Rust (no system `protoc`) and `tonic-prost-build` writes the
//! prost messages and tonic stubs; the encoded descriptor set serves gRPC
//! reflection. Run with `HOOKWIRE_REGENERATE=1` after changing a .proto
//! to rewrite the files instead of comparing.

use std::path::Path;

use prost::Message;

const PROTOS: [&str; 2] = [
    "proto/hookwire/v1/interceptor.proto",
    "proto/hookwire/v1/approval.proto",
];

#[test]
fn generated_code_matches_the_proto() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let protos = PROTOS.map(|p| root.join(p));
    let descriptors = protox::compile(protos, [root.join("proto")]).expect("the protos compile");
    let encoded = descriptors.encode_to_vec();
    let out = tempfile::tempdir().expect("a temporary directory");
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .out_dir(out.path())
        .compile_fds(descriptors)
        .expect("code generation");
    let code = std::fs::read_to_string(out.path().join("hookwire.v1.rs")).expect("generated code");

    let pb = root.join("src/pb");
    if std::env::var_os("HOOKWIRE_REGENERATE").is_some() {
        std::fs::write(pb.join("hookwire.v1.rs"), &code).expect("write the code");
        std::fs::write(pb.join("hookwire_descriptor.bin"), &encoded).expect("write the set");
        return;
    }
    let stale = "src/pb/ is stale: run `HOOKWIRE_REGENERATE=1 cargo test -p hookwire codegen`";
    let checked_in = std::fs::read_to_string(pb.join("hookwire.v1.rs")).expect("src/pb code");
    assert!(checked_in == code, "{stale}");
    let checked_in = std::fs::read(pb.join("hookwire_descriptor.bin")).expect("src/pb set");
    assert!(checked_in == encoded, "{stale}");
}
