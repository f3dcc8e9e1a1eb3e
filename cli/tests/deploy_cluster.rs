//! The declarations the Kubernetes overlays carry, run as the cluster
//! would run them: each through `hookwire check` against local stand-ins
//! for the cluster's services (the fleet as `policy serve` over the shipped
//! policies, the approval service taking the host's token), and the
//! gateway pod's own command line, its addresses, files and services
//! replaced by those stand-ins, governing one request.

use std::path::Path;
use std::process::{Command, Stdio};

use hookwire_testkit::workspace_root;
use serde_json::Value;

use crate::deploy::{EXPECTED, after, named, render, str_of, validate};

/// The declarations an overlay carries: every ConfigMap entry that is a
/// declaration document, by `ConfigMap/key`.
fn declarations(objects: &[Value]) -> Vec<(String, Value)> {
    let mut found = Vec::new();
    for map in objects.iter().filter(|o| o["kind"] == "ConfigMap") {
        let Some(data) = map["data"].as_object() else {
            continue;
        };
        for (key, text) in data {
            let Ok(doc) = serde_json::from_str::<Value>(str_of(text)) else {
                continue;
            };
            if doc["declaration"].is_string() {
                found.push((format!("{}/{key}", str_of(&map["metadata"]["name"])), doc));
            }
        }
    }
    found
}

/// `doc` with every `hookwire.grpc` endpoint pointed at `stand_in`.
fn pointed_at(mut doc: Value, stand_in: &str) -> Value {
    for binding in doc["bindings"].as_array_mut().unwrap() {
        if binding["kind"] == "hookwire.grpc" {
            let config = binding["config"].as_object_mut().unwrap();
            assert!(config.contains_key("endpoint"), "{binding}");
            config.insert("endpoint".into(), stand_in.into());
        }
    }
    doc
}

/// The stand-ins of the cluster's services a gateway pod names.
struct StandIns<'a> {
    declaration: &'a Path,
    upstream: &'a str,
    key_file: &'a Path,
    clients_file: &'a Path,
    approvals: &'a str,
    token_file: &'a Path,
}

/// The gateway Deployment's arguments with every address, file and
/// service replaced by its local stand-in; a flag this does not know
/// fails the test, so a new one gets a stand-in here.
fn gateway_args(args: &[&str], s: &StandIns<'_>) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(&arg) = it.next() {
        if !arg.starts_with("--") {
            out.push(arg.to_owned());
            continue;
        }
        let value = *it.next().unwrap_or_else(|| panic!("{arg} has no value"));
        let local = match arg {
            "--listen" | "--metrics-addr" => "127.0.0.1:0".to_owned(),
            "--upstream" => s.upstream.to_owned(),
            "--declaration" => s.declaration.display().to_string(),
            "--key-file" => s.key_file.display().to_string(),
            "--clients-file" => s.clients_file.display().to_string(),
            "--approval-endpoint" => s.approvals.to_owned(),
            "--approval-token-file" => s.token_file.display().to_string(),
            // The stand-in serves plaintext gRPC: no authority to trust.
            "--approval-ca" => continue,
            "--approval-reattach-grace" => value.to_owned(),
            other => panic!("no stand-in for the gateway's {other} {value}"),
        };
        out.push(arg.to_owned());
        out.push(local);
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn every_overlays_declarations_check_clean_and_govern_a_request() {
    use crate::gateway::{Running, chat, line_starting, lines_of, policy_serve, upstream};
    use hookwire_approvals::{Access, AccessConfig, ApprovalServer, PrincipalConfig};

    // The cluster's services, on loopback: the fleet (`policy serve` over
    // the shipped policies, as the ConfigMap carries them) and the
    // approval service, which takes the host's stream with its token.
    let (_policy, fleet) = policy_serve(&workspace_root().join("examples/policies"));
    let host_token = hookwire_approvals::auth::new_token().unwrap();
    let access = Access::new(
        &AccessConfig::default().host(PrincipalConfig::token("hookwire-gateway", &host_token)),
    )
    .unwrap();
    let approvals = ApprovalServer::new(access).spawn_local().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("approval-token");
    std::fs::write(&token_file, &host_token).unwrap();
    let key_file = dir.path().join("keys");
    std::fs::write(&key_file, "sk-cluster-upstream-key\n").unwrap();
    // The one client the pod admits: the key the test's client sends.
    let clients_file = dir.path().join("clients");
    let line = format!(
        "cluster-test {}\n",
        hookwire_edge::token::sha256_hex(crate::gateway::CLIENT_KEY)
    );
    std::fs::write(&clients_file, line).unwrap();
    let (model, seen) = upstream();

    let root = workspace_root().join("deploy/kubernetes");
    for (overlay, _) in EXPECTED {
        let yaml = render(&root.join("overlays").join(overlay));
        let (objects, _) = validate(&yaml);
        let carried = declarations(&objects);
        assert!(!carried.is_empty(), "{overlay}: no declaration");
        for (name, doc) in carried {
            let path = dir
                .path()
                .join(format!("{overlay}-{}", name.replace('/', "-")));
            std::fs::write(&path, pointed_at(doc, &fleet).to_string()).unwrap();
            let out = Command::new(env!("CARGO_BIN_EXE_hookwire"))
                .arg("check")
                .arg(&path)
                .args(["--timeout-ms", "5000", "--approval-endpoint"])
                .arg(approvals.endpoint())
                .arg("--approval-token-file")
                .arg(&token_file)
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                out.status.success(),
                "{overlay} {name}: hookwire check:\n{stdout}\n{stderr}"
            );
            assert!(
                !stdout.contains("no interceptor"),
                "{overlay} {name}:\n{stdout}"
            );
        }

        // The gateway pod's own command line, on the declaration it mounts.
        let gateway = named(&objects, "Deployment", "hookwire-gateway");
        let pod = &gateway["spec"]["template"]["spec"];
        let args: Vec<&str> = pod["containers"][0]["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(str_of)
            .collect();
        let mounted = after(&args, "--declaration");
        assert_eq!(mounted.len(), 1, "{overlay}");
        let mount = pod["containers"][0]["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| mounted[0].starts_with(str_of(&m["mountPath"])))
            .unwrap_or_else(|| panic!("{overlay}: {} is not mounted", mounted[0]));
        let volume = pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == mount["name"])
            .unwrap();
        let map = str_of(&volume["configMap"]["name"]);
        let key = mounted[0].rsplit('/').next().unwrap();
        let path = dir.path().join(format!("{overlay}-{map}-{key}"));
        assert!(
            path.is_file(),
            "{overlay}: {map}/{key} is not a checked declaration"
        );
        let local = gateway_args(
            &args,
            &StandIns {
                declaration: &path,
                upstream: &model,
                key_file: &key_file,
                clients_file: &clients_file,
                approvals: &approvals.endpoint(),
                token_file: &token_file,
            },
        );
        let mut child = Command::new(env!("CARGO_BIN_EXE_hookwire"))
            .args(&local)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run hookwire gateway");
        let mut err = child.stderr.take().unwrap();
        let banners = {
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                use std::io::BufRead;
                for line in std::io::BufReader::new(&mut err).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
            rx
        };
        let _stdout = lines_of(&mut child);
        let _gateway = Running(child);
        let banner = line_starting(&banners, "hookwire gateway: ");
        let addr = banner
            .split_whitespace()
            .nth(2)
            .unwrap()
            .trim_start_matches("http://")
            .trim_end_matches("/v1")
            .to_owned();
        let before = seen.lock().unwrap().len();
        let (status, answer) = tokio::task::spawn_blocking(move || {
            chat(
                &addr,
                &serde_json::json!({"model": "m",
                    "messages": [{"role": "user", "content": "tidy up"}],
                    "tools": [{"type": "function", "function": {"name": "bash",
                               "parameters": {"type": "object"}}}]}),
            )
        })
        .await
        .unwrap();
        // Governed: the fleet's destructive-command policy took the
        // `rm -rf /` the model proposed, the `ls` went through.
        assert_eq!(status, 200, "{overlay}: {answer}");
        let calls = answer["choices"][0]["message"]["tool_calls"]
            .as_array()
            .unwrap_or_else(|| panic!("{overlay}: {answer}"));
        assert_eq!(calls.len(), 1, "{overlay}: {answer}");
        assert_eq!(calls[0]["id"], "call_1", "{overlay}: {answer}");
        assert!(
            seen.lock().unwrap().len() > before,
            "{overlay}: the model was asked"
        );
    }
    approvals.shutdown().await.unwrap();
}
