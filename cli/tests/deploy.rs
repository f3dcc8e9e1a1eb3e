//! The Kubernetes manifests of `deploy/kubernetes`: every overlay rendered
//! by `kubectl kustomize`, each rendered object validated offline against
//! the Kubernetes schemas (strict, 1.27 and 1.37, the pinned
//! kubernetes-validate that `scripts/setup.sh` puts in the venv), the
//! object count of each overlay, and what no schema checks: every flag
//! given to `hookwire` exists in that command's `--help`, the gateway's
//! declaration names the fleet's headless Service, the probes, scrape
//! annotations and NetworkPolicies name real ports and pods, and the
//! Prometheus Operator's ServiceMonitors (a CRD) select Services with a
//! `metrics` port.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use hookwire_testkit::workspace_root;
use serde_json::Value;

/// The Kubernetes versions validated against: the oldest with `grpc:`
/// probes generally available, and the newest the validator carries.
const VERSIONS: [&str; 2] = ["1.27", "1.37"];

/// The objects each overlay renders, by kind.
pub(crate) const EXPECTED: [(&str, &[(&str, usize)]); 2] = [
    (
        "dev",
        &[
            ("ConfigMap", 2),
            ("Deployment", 3),
            ("Namespace", 1),
            ("NetworkPolicy", 3),
            ("Secret", 1),
            ("Service", 4),
        ],
    ),
    (
        "production",
        &[
            ("ConfigMap", 2),
            ("Deployment", 3),
            ("Namespace", 1),
            ("NetworkPolicy", 3),
            ("PodDisruptionBudget", 3),
            ("Service", 4),
            ("ServiceMonitor", 3),
        ],
    ),
];

/// `kubectl kustomize DIR`.
pub(crate) fn render(dir: &Path) -> String {
    let out = Command::new(std::env::var_os("KUBECTL").unwrap_or("kubectl".into()))
        .arg("kustomize")
        .arg(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run kubectl (set KUBECTL to its path): {e}"));
    assert!(
        out.status.success(),
        "kubectl kustomize {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The validator's report on `yaml`: the objects and each outcome.
pub(crate) fn validate(yaml: &str) -> (Vec<Value>, Vec<Value>) {
    let mut child = Command::new(hookwire_testkit::python_venv(&[
        "kubernetes_validate",
        "yaml",
    ]))
    .arg(workspace_root().join("cli/tests/fixtures/deploy/validate.py"))
    .args(VERSIONS)
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("run the validator");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(yaml.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "validate.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let take = |v: &mut Value, k: &str| match v[k].take() {
        Value::Array(items) => items,
        other => panic!("{k}: {other}"),
    };
    (take(&mut report, "objects"), take(&mut report, "results"))
}

pub(crate) fn named<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

pub(crate) fn str_of(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not a string: {v}"))
}

/// `hookwire SUBCOMMAND... --help`.
fn help(subcommand: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(subcommand)
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success(), "hookwire {subcommand:?} --help");
    String::from_utf8(out.stdout).unwrap()
}

/// Every `--flag` of a container's arguments exists in its command's help.
fn flags_exist(args: &[&str]) {
    let subcommand: Vec<&str> = args
        .iter()
        .copied()
        .take_while(|a| !a.starts_with('-') && !a.starts_with('/'))
        .collect();
    let text = help(&subcommand);
    for flag in args.iter().filter(|a| a.starts_with("--")) {
        assert!(
            text.contains(&format!("{flag} ")) || text.contains(&format!("{flag}\n")),
            "hookwire {} has no {flag}:\n{text}",
            subcommand.join(" ")
        );
    }
}

/// The value after `flag` in `args`.
pub(crate) fn after<'a>(args: &[&'a str], flag: &str) -> Vec<&'a str> {
    args.windows(2)
        .filter(|w| w[0] == flag)
        .map(|w| w[1])
        .collect()
}

fn port_of(addr: &str) -> u64 {
    addr.rsplit(':').next().unwrap().parse().unwrap()
}

fn labels_match(selector: &Value, labels: &Value) -> bool {
    selector
        .as_object()
        .is_some_and(|s| s.iter().all(|(k, v)| labels.get(k) == Some(v)))
}

/// What each Deployment, its Service and its NetworkPolicy must agree on.
fn check_deployments(overlay: &str, objects: &[Value]) {
    let deployments: Vec<&Value> = objects
        .iter()
        .filter(|o| o["kind"] == "Deployment")
        .collect();
    for d in &deployments {
        let name = str_of(&d["metadata"]["name"]);
        let pod = &d["spec"]["template"];
        let container = &pod["spec"]["containers"][0];
        assert!(
            str_of(&container["image"]).starts_with("localhost/hookwire:"),
            "{overlay} {name}: {}",
            container["image"]
        );
        let args: Vec<&str> = container["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(str_of)
            .collect();
        flags_exist(&args);
        let ports: BTreeMap<&str, u64> = container["ports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (str_of(&p["name"]), p["containerPort"].as_u64().unwrap()))
            .collect();
        // Scraped where the command serves its metrics.
        let metrics = after(&args, "--metrics-addr");
        assert_eq!(metrics.len(), 1, "{overlay} {name}: one --metrics-addr");
        assert_eq!(Some(&port_of(metrics[0])), ports.get("metrics"));
        let annotations = &pod["metadata"]["annotations"];
        assert_eq!(annotations["prometheus.io/scrape"], "true");
        assert_eq!(
            str_of(&annotations["prometheus.io/port"]),
            port_of(metrics[0]).to_string()
        );
        for probe in ["readinessProbe", "livenessProbe"] {
            let p = &container[probe];
            let port = p["grpc"]["port"]
                .as_u64()
                .or(p["tcpSocket"]["port"].as_u64())
                .unwrap_or_else(|| panic!("{overlay} {name}: no {probe}"));
            assert!(ports.values().any(|&c| c == port), "{name} {probe}");
        }
        // Every Service selecting these pods targets named ports they have.
        for s in objects.iter().filter(|o| o["kind"] == "Service") {
            if labels_match(&s["spec"]["selector"], &pod["metadata"]["labels"]) {
                for p in s["spec"]["ports"].as_array().unwrap() {
                    let target = str_of(&p["targetPort"]);
                    assert!(ports.contains_key(target), "{name}: {target}");
                }
            }
        }
    }
    // Every Deployment spreads its replicas over nodes, and where the
    // overlay keeps disruption budgets (production), one covers it.
    let budgets: Vec<&Value> = objects
        .iter()
        .filter(|o| o["kind"] == "PodDisruptionBudget")
        .collect();
    for d in &deployments {
        let name = str_of(&d["metadata"]["name"]);
        let labels = &d["spec"]["template"]["metadata"]["labels"];
        let spread = d["spec"]["template"]["spec"]["topologySpreadConstraints"]
            .as_array()
            .unwrap_or_else(|| panic!("{overlay} {name}: no topology spread"));
        assert!(
            spread
                .iter()
                .any(|c| c["topologyKey"] == "kubernetes.io/hostname"
                    && labels_match(&c["labelSelector"]["matchLabels"], labels)),
            "{overlay} {name}: {spread:?}"
        );
        if !budgets.is_empty() {
            assert!(
                budgets
                    .iter()
                    .any(|b| labels_match(&b["spec"]["selector"]["matchLabels"], labels)),
                "{overlay} {name}: no PodDisruptionBudget"
            );
        }
    }

    // The fleet: a gRPC probe on its gRPC port, behind a headless Service.
    let policy = named(objects, "Deployment", "hookwire-policy");
    let probe = &policy["spec"]["template"]["spec"]["containers"][0]["readinessProbe"];
    assert_eq!(probe["grpc"]["port"], 50153);
    let fleet = named(objects, "Service", "hookwire-policy");
    assert_eq!(fleet["spec"]["clusterIP"], "None");

    // The gateway's declaration binds the fleet by the headless name.
    let declaration = objects
        .iter()
        .find(|o| {
            o["kind"] == "ConfigMap"
                && str_of(&o["metadata"]["name"]).starts_with("hookwire-gateway-declaration")
        })
        .expect("the gateway's declaration");
    let doc: Value =
        serde_json::from_str(str_of(&declaration["data"]["declaration.json"])).unwrap();
    let endpoint = str_of(&doc["bindings"][0]["config"]["endpoint"]);
    assert_eq!(endpoint, "http://hookwire-policy:50153", "{overlay}");
    assert!(doc["bindings"][0]["config"]["dns_refresh_ms"].is_u64());
    assert_eq!(
        doc["configuration"]["approval"]["resolver"],
        "approval-stream"
    );
    let gateway = named(objects, "Deployment", "hookwire-gateway");
    let args: Vec<&str> = gateway["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(str_of)
        .collect();
    let approvals = named(objects, "Service", "hookwire-approvals");
    for url in after(&args, "--approval-endpoint") {
        let port = approvals["spec"]["ports"][0]["port"].as_u64().unwrap();
        assert!(
            url.ends_with(&format!("//hookwire-approvals:{port}")),
            "{url}"
        );
    }

    // Only hosts reach the fleet's gRPC: the gateway's pods do, the
    // approval service's pods do not.
    let rule = &named(objects, "NetworkPolicy", "hookwire-policy-from-hosts")["spec"]["ingress"][0];
    let admits = |labels: &Value| {
        rule["from"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|peer| peer.get("namespaceSelector").is_none())
            .any(|peer| labels_match(&peer["podSelector"]["matchLabels"], labels))
    };
    assert!(admits(&gateway["spec"]["template"]["metadata"]["labels"]));
    let approvals_pods = &named(objects, "Deployment", "hookwire-approvals")["spec"]["template"];
    assert!(!admits(&approvals_pods["metadata"]["labels"]));
    assert_eq!(rule["ports"][0]["port"], "grpc");
}

#[test]
fn every_overlay_renders_validates_and_names_real_flags_and_ports() {
    let root = workspace_root().join("deploy/kubernetes");
    let mut counts = Vec::new();
    for (overlay, expected) in EXPECTED {
        let yaml = render(&root.join("overlays").join(overlay));
        let (objects, results) = validate(&yaml);
        for r in &results {
            let outcome = str_of(&r["outcome"]);
            let custom = r["kind"] == "ServiceMonitor";
            assert!(
                outcome == "ok" || (custom && outcome == "no schema"),
                "{overlay}: {} {} on {}: {outcome}",
                r["kind"],
                r["name"],
                r["version"]
            );
        }
        assert_eq!(results.len(), objects.len() * VERSIONS.len());
        let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
        for o in &objects {
            *kinds.entry(str_of(&o["kind"])).or_default() += 1;
        }
        assert_eq!(kinds, expected.iter().copied().collect(), "{overlay}");
        check_deployments(overlay, &objects);
        for monitor in objects.iter().filter(|o| o["kind"] == "ServiceMonitor") {
            assert_eq!(monitor["apiVersion"], "monitoring.coreos.com/v1");
            let selector = &monitor["spec"]["selector"]["matchLabels"];
            let scraped: Vec<&Value> = objects
                .iter()
                .filter(|o| o["kind"] == "Service")
                .filter(|s| labels_match(selector, &s["metadata"]["labels"]))
                .filter(|s| {
                    s["spec"]["ports"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|p| p["name"] == "metrics")
                })
                .collect();
            assert_eq!(scraped.len(), 1, "{}", monitor["metadata"]["name"]);
            assert_eq!(monitor["spec"]["endpoints"][0]["port"], "metrics");
        }
        counts.push(format!("{overlay} {}", objects.len()));
    }
    eprintln!("rendered objects: {}", counts.join(", "));
}

#[test]
fn the_policies_config_map_carries_every_policy_module() {
    let dir = workspace_root().join("examples/policies");
    let yaml = render(&dir);
    let (objects, _) = validate(&yaml);
    assert_eq!(objects.len(), 1);
    let keys: BTreeSet<&str> = objects[0]["data"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut wanted = BTreeSet::from(["data.yaml".to_owned()]);
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".rego") && !name.ends_with("_test.rego") {
            wanted.insert(name);
        }
    }
    assert_eq!(keys, wanted.iter().map(String::as_str).collect());
}

#[test]
fn the_validator_refuses_an_unknown_field() {
    let (_, results) =
        validate("apiVersion: v1\nkind: Service\nmetadata:\n  name: x\nspec:\n  clusterIp: None\n");
    assert!(
        results
            .iter()
            .all(|r| str_of(&r["outcome"]).starts_with("invalid")),
        "{results:?}"
    );
}
