//! The container image of `scripts/image.sh`, built from the binary this
//! suite already built and run with podman as an operator would: the
//! image's `serve-demo` on the host network, then `hookwire check` through
//! the same image against it. Where podman or buildah is missing or the
//! kernel refuses to run containers it fails under CI (`CI=true`) and is
//! skipped loudly elsewhere (`hookwire_testkit::require`).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use hookwire_testkit::{on_path, require, require_tool, workspace_root};

fn podman(args: &[&str]) -> Output {
    Command::new("podman")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run podman")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Removes the test's container and image, however the test ends.
struct Cleanup {
    image: String,
    container: String,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = podman(&["rm", "--force", "--time", "0", &self.container]);
        let _ = podman(&["rmi", "--force", &self.image]);
    }
}

/// The `podman run` flags this machine needs, found by running the image's
/// `--version`: none where podman's defaults work; where the sandbox
/// refuses the resource limits podman raises, explicit lower ones; where
/// crun refuses hybrid cgroups, runc. `Err` lists every attempt's error.
fn run_flags(image: &str, version: &str) -> Result<Vec<&'static str>, String> {
    const LIMITS: [&str; 4] = [
        "--ulimit",
        "nofile=4096:4096",
        "--ulimit",
        "nproc=4096:4096",
    ];
    let mut candidates: Vec<Vec<&'static str>> = vec![vec![], LIMITS.to_vec()];
    if on_path("runc") {
        candidates.push([&["--runtime", "runc"][..], &LIMITS[..]].concat());
    }
    let mut refused = Vec::new();
    for flags in candidates {
        let mut args = vec!["run", "--rm"];
        args.extend(&flags);
        args.extend([image, "--version"]);
        let out = podman(&args);
        let said = text(&out);
        if out.status.success() && said.trim() == version {
            return Ok(flags);
        }
        refused.push(format!("podman run {flags:?}: {}", said.trim()));
    }
    Err(refused.join("\n"))
}

#[test]
fn the_image_serves_the_demo_and_checks_a_declaration_against_it() {
    let why = "the image test builds and runs the image (scripts/setup.sh installs Debian's podman and buildah when run as root)";
    if !(require_tool("podman", why) && require_tool("buildah", why)) {
        return;
    }
    let started = Instant::now();
    let binary = env!("CARGO_BIN_EXE_hookwire");
    let version = Command::new(binary).arg("--version").output().unwrap();
    let version = String::from_utf8(version.stdout).unwrap().trim().to_owned();
    let pid = std::process::id();
    let image = format!("localhost/hookwire-test:{pid}");
    let _cleanup = Cleanup {
        image: image.clone(),
        container: format!("hookwire-test-demo-{pid}"),
    };

    let built = Command::new(workspace_root().join("scripts/image.sh"))
        .args(["--binary", binary, "--tag", &image])
        .stdin(Stdio::null())
        .output()
        .expect("run scripts/image.sh");
    assert!(built.status.success(), "scripts/image.sh: {}", text(&built));
    assert!(
        String::from_utf8_lossy(&built.stdout).contains(&format!("image: {image} ({version}")),
        "{}",
        text(&built)
    );
    let config = podman(&[
        "image",
        "inspect",
        "--format",
        "{{.Config.User}} {{.Config.Entrypoint}}",
        &image,
    ]);
    assert_eq!(
        String::from_utf8_lossy(&config.stdout).trim(),
        "10001:10001 [/usr/local/bin/hookwire]",
        "{}",
        text(&config)
    );
    let flags = match run_flags(&image, &version) {
        Ok(flags) => flags,
        Err(refused) => {
            require(
                false,
                "a kernel that lets podman run containers",
                &format!("the image test runs the image; podman refused:\n{refused}"),
            );
            return;
        }
    };

    // The services, in the container, on the host's loopback.
    let mut demo = Command::new("podman");
    demo.args([
        "run",
        "--rm",
        "--name",
        &_cleanup.container,
        "--network",
        "host",
    ])
    .args(&flags)
    .args([&image, "serve-demo", "--policy", "127.0.0.1:0"])
    .args(["--redactor", "127.0.0.1:0"])
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::inherit());
    let mut demo: Child = demo.spawn().expect("podman run serve-demo");
    let stdout = demo.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(line);
        }
    });
    let (mut policy, mut redactor) = (None, None);
    while policy.is_none() || redactor.is_none() {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the image's serve-demo printed its addresses");
        let url = line.split_whitespace().last().map(str::to_owned);
        if line.starts_with("policy") {
            policy = url;
        } else if line.starts_with("redactor") {
            redactor = url;
        }
    }

    // `check`, through the image, reading a declaration mounted into it.
    let dir = tempfile::tempdir().unwrap();
    let declaration = dir.path().join("declaration.json");
    let demo_doc =
        std::fs::read_to_string(workspace_root().join("examples/declarations/demo.json"))
            .unwrap()
            .replace("http://127.0.0.1:50151", policy.as_deref().unwrap())
            .replace("http://127.0.0.1:50152", redactor.as_deref().unwrap());
    std::fs::write(&declaration, demo_doc).unwrap();
    let mount = format!(
        "{}:/home/hookwire/declaration.json:ro",
        Path::new(&declaration).display()
    );
    let mut args = vec!["run", "--rm", "--network", "host", "--volume", &mount];
    args.extend(&flags);
    args.extend([image.as_str(), "check", "declaration.json"]);
    let checked = podman(&args);
    let said = text(&checked);
    assert!(checked.status.success(), "{said}");
    assert_eq!(said.matches("health SERVING").count(), 2, "{said}");
    assert!(
        said.contains("Describe: demo-policy 0.1.0 (handles pre_tool_call)"),
        "{said}"
    );
    assert!(
        said.contains("Describe: demo-redactor 0.1.0 (handles input)"),
        "{said}"
    );
    assert!(
        said.contains("ok: 3 bindings, 2 endpoints serving"),
        "{said}"
    );

    // Stopped by its stop signal, as `podman stop` and a kubelet do.
    let stopped = podman(&["stop", "--time", "20", &_cleanup.container]);
    assert!(stopped.status.success(), "{}", text(&stopped));
    let status = demo.wait().unwrap();
    assert!(
        status.success(),
        "serve-demo in the image ended with {status}"
    );
    eprintln!(
        "image test: built, served and checked in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
