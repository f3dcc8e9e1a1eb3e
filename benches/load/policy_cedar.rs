//! Rows of the `policy` section: a Cedar decision beside the Rego one, on
//! the same policies.
//!
//! The tool-allowlist and spending policies in both languages: the Rego
//! originals with their data (`examples/policies/`: `tool_allowlist.rego`,
//! `spending.rego`, `data.yaml`) and their Cedar ports
//! (`examples/policies-cedar/`), each served by `hookwire policy`'s service
//! on loopback in this process. The 1 KiB `pre_tool_call` of the other
//! sections (a `bash` call by an agent without an allowlist) is allowed by
//! both after every policy was evaluated. Rows:
//!
//! - remote latency, medians of interleaved rounds (`cedar_vs_rego`);
//! - one in-process decision (`PolicySet::decide`) in each language
//!   (`cedar_decide_vs_rego`).

use std::path::{Path, PathBuf};
use std::time::Instant;

use hookwire::Profile;
use hookwire_policy::{Policies, PolicyOptions, PolicyService, PolicySet};
use hookwire_server::spawn_local;

use crate::measure::{Emit, Samples, interleaved};
use crate::report::Headline;
use crate::{KIB, Plan, REMOTE_TIMEOUT, fixtures, started};

/// A folder with the Rego originals and their data only (the library's
/// other packages would add work the Cedar ports do not do). Removed when
/// dropped.
struct RegoOriginals(PathBuf);

impl RegoOriginals {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!(
            "hookwire-bench-rego-vs-cedar-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir).expect("policy folder");
        for name in ["tool_allowlist.rego", "spending.rego", "data.yaml"] {
            std::fs::copy(examples().join("policies").join(name), dir.join(name))
                .expect("copy a policy");
        }
        Self(dir)
    }
}

impl Drop for RegoOriginals {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn examples() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples"))
}

fn cedar_dir() -> PathBuf {
    examples().join("policies-cedar")
}

/// The median time of one in-process decision of `set`, in batches.
fn in_process(set: &PolicySet, n: usize) -> Samples {
    let ctx = fixtures::context(&fixtures::tool_args(KIB));
    let mut batches = Samples::default();
    for _ in 0..20 {
        let t = Instant::now();
        for _ in 0..n / 20 {
            assert!(set.decide(&ctx).expect("decides").is_permit());
        }
        batches
            .0
            .push(t.elapsed().as_secs_f64() * 1e6 / (n / 20) as f64);
    }
    batches
}

/// Runs the rows: they go to `headline`.
pub async fn rows(plan: Plan, headline: &mut Vec<Headline>) {
    eprintln!("policy: Cedar decision vs the same policies in Rego ...");
    let rego_dir = RegoOriginals::new();
    let options = PolicyOptions::default();
    let rego = Policies::load(&rego_dir.0, options).expect("the Rego originals load");
    let cedar = Policies::load(cedar_dir(), options).expect("the Cedar ports load");
    let rego_server = spawn_local(PolicyService::new(rego.clone()))
        .await
        .expect("serve Rego");
    let cedar_server = spawn_local(PolicyService::new(cedar.clone()))
        .await
        .expect("serve Cedar");
    let call = fixtures::tool_call(&fixtures::tool_args(KIB));
    let host =
        |url: &str| fixtures::remote_host(url, 1, Profile::SequentialFirstDeny, REMOTE_TIMEOUT);
    let (cedar_host, rego_host) = (
        host(&cedar_server.endpoint()),
        host(&rego_server.endpoint()),
    );
    let mut on_cedar = Emit {
        session: started(&cedar_host, "s-cedar").await,
        call: call.clone(),
    };
    let mut on_rego = Emit {
        session: started(&rego_host, "s-rego-ports").await,
        call,
    };
    let (a, b) = interleaved(
        &mut on_cedar,
        &mut on_rego,
        200,
        plan.rounds,
        plan.remote_per_round,
    )
    .await;
    headline.push(Headline::latency(
        "remote Cedar decision (tool allowlist + spending ports) vs the same policies in Rego"
            .to_owned(),
        &a,
        &b,
        "cedar_vs_rego",
        None,
    ));
    let _ = cedar_server.shutdown().await;
    let _ = rego_server.shutdown().await;

    let n = if plan.rounds < 10 { 2_000 } else { 20_000 };
    let (cedar_set, rego_set) = (cedar.current(), rego.current());
    let cedar_us = in_process(&cedar_set, n);
    let rego_us = in_process(&rego_set, n);
    headline.push(Headline::latency(
        "in-process Cedar decision vs Rego (`PolicySet::decide`, same policies, no transport)"
            .to_owned(),
        &cedar_us,
        &rego_us,
        "cedar_decide_vs_rego",
        None,
    ));
}
