//! Policies decided inside the host (`hookwire.rego`, what `--policy DIR`
//! binds): the policy folder the edges' embedded paths load, the host
//! built from it exactly as the commands build theirs, and the
//! `policy_embedded_vs_rust` row.
//!
//! The folder holds the library's `pii` (input, output),
//! `destructive_commands` (`pre_tool_call`) and `secrets`
//! (`post_tool_call`) packages, and one bench package deciding at
//! `pre_model_call` and `post_model_call`, so that a Chat turn through the
//! gateway meets a Rego decision at each of its four points, and a
//! `tools/call` through the MCP proxy at both of its own.
//!
//! A child that builds its host from a binding argument reads
//! [`POLICY_PREFIX`]`DIR` as "this folder, in process" and anything else
//! as a remote interceptor's URL ([`host`]).

use std::path::{Path, PathBuf};

use hookwire::Profile;
use hookwire_client::declaration::{Declaration, Registry};
use hookwire_client::{Host, InterceptorBinding};
use hookwire_demo as demo_agent;
use hookwire_policy::embedded;

use crate::measure::{Emit, interleaved};
use crate::report::Headline;
use crate::{KIB, Plan, REMOTE_TIMEOUT, fixtures, started};

/// A binding argument naming a policy folder decided in process.
pub const POLICY_PREFIX: &str = "policy:";

/// The binding argument of an allow bound in process at every point (the
/// bench's `Allow`): what a host costs with no decision work at all.
pub const LOCAL_ALLOW: &str = "local:allow";

/// The library packages the folder copies from `examples/policies`.
const LIBRARY: [&str; 3] = ["pii.rego", "destructive_commands.rego", "secrets.rego"];

/// The bench's own package: the model-call points, with the kind of check
/// an operator writes there (a retired model refused; a marker in the
/// answer refused).
const MODEL_CALLS: &str = r#"# The bench's model-call checks: a retired model, and an answer carrying
# a forbidden marker, are denied.
package hookwire.bench_model_calls

import rego.v1

points := {"pre_model_call", "post_model_call"}

retired_models := {"gpt-3.5-turbo-0301", "text-davinci-003"}

deny contains "policy:model_retired" if {
	input.interception_point == "pre_model_call"
	input.model.id in retired_models
}

deny contains "policy:answer_marker" if {
	input.interception_point == "post_model_call"
	contains(json.marshal(input.target), "hookwire-bench-forbidden")
}
"#;

/// A temporary policy folder, removed when dropped.
pub struct PolicyDir(PathBuf);

impl PolicyDir {
    /// The four-point folder described in the module's docs.
    pub fn four_points() -> Self {
        let dir = Self::empty("four-points");
        let library = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/policies");
        for file in LIBRARY {
            std::fs::copy(Path::new(library).join(file), dir.0.join(file))
                .expect("copy a library policy");
        }
        std::fs::write(dir.0.join("bench_model_calls.rego"), MODEL_CALLS)
            .expect("write the bench policy");
        dir
    }

    /// Only the destructive-command package: the decision the Rust demo
    /// policy makes.
    pub fn destructive_only() -> Self {
        let dir = Self::empty("destructive");
        let source = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../examples/policies/destructive_commands.rego"
        );
        std::fs::copy(source, dir.0.join("destructive_commands.rego")).expect("copy the policy");
        dir
    }

    fn empty(what: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "hookwire-bench-{what}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir).expect("policy folder");
        Self(dir)
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// The binding argument naming it for a child ([`host`]).
    pub fn argument(&self) -> String {
        format!("{POLICY_PREFIX}{}", self.0.display())
    }
}

impl Drop for PolicyDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The host `hookwire gateway|mcp --policy DIR` builds: the one-process
/// declaration of `dir`, loaded against the standard kinds and the
/// embedded policy kinds.
pub fn policy_host(dir: &Path) -> Host {
    let registry = embedded::register(Registry::standard()).expect("the policy kinds register");
    let declaration = Declaration::from_value(&embedded::one_process_declaration(dir))
        .expect("the one-process declaration is valid");
    Host::declared(fixtures::AGENT, fixtures::FRAMEWORK)
        .load(&declaration, &registry)
        .expect("the policy folder loads")
}

/// A child's host from its binding argument: [`POLICY_PREFIX`]`DIR` decides
/// with that folder in process, [`LOCAL_ALLOW`] allows in process; anything
/// else is one remote interceptor's URL, bound with the bench's bound.
pub fn host(binding: &str) -> Host {
    if binding == LOCAL_ALLOW {
        return fixtures::local_host(fixtures::Chain::allow(1));
    }
    match binding.strip_prefix(POLICY_PREFIX) {
        Some(dir) => policy_host(Path::new(dir)),
        None => fixtures::remote_host(binding, 1, Profile::SequentialFirstDeny, REMOTE_TIMEOUT),
    }
}

/// `policy_embedded_vs_rust`: the 1 KiB `pre_tool_call` decided in the
/// host by the destructive-command Rego package (the `hookwire.rego`
/// binding, on its evaluation workers) against the same decision by the
/// demo's Rust policy bound in process.
pub async fn versus_rust(plan: Plan, headline: &mut Vec<Headline>) {
    eprintln!("policy: in-process Rego in a host vs the in-process Rust policy ...");
    let dir = PolicyDir::destructive_only();
    let rego_host = policy_host(dir.path());
    let rust_host = Host::builder(fixtures::AGENT, fixtures::FRAMEWORK)
        .bind(InterceptorBinding::local("policy", demo_agent::Policy))
        .build()
        .expect("host builds");
    let call = fixtures::tool_call(&fixtures::tool_args(KIB));
    let mut rego = Emit {
        session: started(&rego_host, "s-embedded-rego").await,
        call: call.clone(),
    };
    let mut rust = Emit {
        session: started(&rust_host, "s-embedded-rust").await,
        call,
    };
    let (a, b) = interleaved(&mut rego, &mut rust, 200, plan.rounds, plan.local_per_round).await;
    headline.push(Headline::latency(
        "in-process Rego decision in a host (`hookwire.rego`, destructive commands) vs the \
         Rust demo policy bound in process"
            .to_owned(),
        &a,
        &b,
        "policy_embedded_vs_rust",
        Some((3.0, false)),
    ));
}
