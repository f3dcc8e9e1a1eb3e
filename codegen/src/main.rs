//! hookwire-codegen: writes the wire code checked in under `src/pb/` from
//! `proto/hookwire/v1` — `protox` parses the .proto files in pure Rust (no
//! system `protoc`) and `tonic-prost-build` writes the prost messages and
//! tonic stubs; the encoded descriptor set serves gRPC reflection. A crate
//! of its own, depending on nothing of hookwire's, so it runs even while
//! the root crate does not compile against a changed proto.
//!
//! `cargo run -p hookwire-codegen` rewrites `src/pb/`;
//! `cargo run -p hookwire-codegen -- --check` (and this crate's test, run
//! by the test suite) fails while `src/pb/` is stale.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use prost::Message;

const PROTOS: [&str; 2] = [
    "proto/hookwire/v1/interceptor.proto",
    "proto/hookwire/v1/approval.proto",
];

const USAGE: &str = "usage: hookwire-codegen [--check]

Writes src/pb/hookwire.v1.rs and src/pb/hookwire_descriptor.bin from
proto/hookwire/v1/*.proto. With --check, writes nothing and exits 1 when
the checked-in files differ from what the protos generate.

example:
  cargo run -p hookwire-codegen            # after editing a .proto
  cargo run -p hookwire-codegen -- --check
";

/// The generated Rust code and the encoded descriptor set.
struct Generated {
    code: String,
    descriptor_set: Vec<u8>,
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the crate sits in the workspace")
        .to_path_buf()
}

fn generate(root: &Path) -> Result<Generated, Box<dyn std::error::Error>> {
    let protos = PROTOS.map(|p| root.join(p));
    let descriptors = protox::compile(protos, [root.join("proto")])?;
    let descriptor_set = descriptors.encode_to_vec();
    let out = tempfile::tempdir()?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .out_dir(out.path())
        .compile_fds(descriptors)?;
    let code = std::fs::read_to_string(out.path().join("hookwire.v1.rs"))?;
    Ok(Generated {
        code,
        descriptor_set,
    })
}

/// Whether the checked-in files are what `generated` holds.
fn up_to_date(pb: &Path, generated: &Generated) -> bool {
    std::fs::read_to_string(pb.join("hookwire.v1.rs"))
        .ok()
        .as_deref()
        == Some(&generated.code)
        && std::fs::read(pb.join("hookwire_descriptor.bin"))
            .ok()
            .as_deref()
            == Some(generated.descriptor_set.as_slice())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let check = match args.as_slice() {
        [] => false,
        [a] if a == "--check" => true,
        [a] if a == "--help" || a == "-h" => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        _ => {
            eprint!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let root = workspace_root();
    let generated = match generate(&root) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("hookwire-codegen: {e}");
            return ExitCode::FAILURE;
        }
    };
    let pb = root.join("src/pb");
    if check {
        if up_to_date(&pb, &generated) {
            println!("hookwire-codegen: src/pb/ matches proto/");
            return ExitCode::SUCCESS;
        }
        eprintln!("hookwire-codegen: src/pb/ is stale: run `cargo run -p hookwire-codegen`");
        return ExitCode::FAILURE;
    }
    let written = std::fs::write(pb.join("hookwire.v1.rs"), &generated.code).and_then(|()| {
        std::fs::write(
            pb.join("hookwire_descriptor.bin"),
            &generated.descriptor_set,
        )
    });
    match written {
        Ok(()) => {
            println!("hookwire-codegen: wrote src/pb/ from proto/");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("hookwire-codegen: cannot write {}: {e}", pb.display());
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_code_matches_the_proto() {
        let root = workspace_root();
        let generated = generate(&root).expect("the protos compile");
        assert!(
            up_to_date(&root.join("src/pb"), &generated),
            "src/pb/ is stale: run `cargo run -p hookwire-codegen`"
        );
    }
}
