//! Loading and filtering the vectors, the per-vector lines, the per-part
//! table and the committed CONFORMANCE.md.

use super::*;

/// `cargo test <filter>` hands the filter to every test binary: run only
/// when no filter is given or one matches this binary's name.
pub(crate) fn skipped_by_cli_filter() -> bool {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--list") {
        println!("conformance: test");
        return true;
    }
    if args.iter().any(|a| a == "--ignored") {
        return true;
    }
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    !filters.is_empty() && !filters.iter().any(|f| "conformance".contains(f.as_str()))
}

/// The ctk-fault identity provider panics on every call by design; the host
/// catches it. Keep its expected traces out of the report.
pub(crate) fn silence_expected_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info
            .payload()
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| info.payload().downcast_ref::<String>().map(String::as_str));
        if payload != Some(CTK_FAULT_PANIC) {
            default(info);
        }
    }));
}

/// Loads the vectors, fetching them first when they are absent.
pub(crate) fn load_vectors() -> Result<Vec<Value>, String> {
    let root = hookwire_testkit::workspace_root();
    let dir = vectors_dir();
    let present = |d: &Path| {
        std::fs::read_dir(d).is_ok_and(|mut it| {
            it.any(|e| e.is_ok_and(|e| e.file_name().to_string_lossy().starts_with("AH-CTK-")))
        })
    };
    if !present(&dir) {
        let script = root.join("scripts/fetch-ctk-vectors.sh");
        eprintln!(
            "conformance: no vectors in {}; running {}",
            dir.display(),
            script.display()
        );
        let status = Command::new("bash")
            .arg(&script)
            .current_dir(root)
            .status()
            .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
        if !status.success() || !present(&dir) {
            return Err(format!(
                "the CTK vectors are missing from {} and {} could not fetch them ({status}); \
                 it needs python3 with pip and access to PyPI",
                dir.display(),
                script.display()
            ));
        }
    }
    agent_hooks::ctk::load_vectors(&dir).map_err(|e| format!("loading {}: {e}", dir.display()))
}

/// Where the vectors are: `HOOKWIRE_CTK_VECTORS`, or `.cache/ctk/vectors`.
pub(crate) fn vectors_dir() -> PathBuf {
    match std::env::var_os("HOOKWIRE_CTK_VECTORS") {
        Some(d) => d.into(),
        None => hookwire_testkit::workspace_root().join(".cache/ctk/vectors"),
    }
}

/// The part a vector reports under; the early vectors carry none.
pub(crate) fn part_of(vector: &Value) -> String {
    match vector["part"].as_str() {
        Some(p) if !p.is_empty() => p.to_owned(),
        _ => "core".to_owned(),
    }
}

/// One vector's line, with its failures or skip reason.
pub(crate) fn print_result(vector: &Value, r: &VectorResult) {
    let title = vector["title"].as_str().unwrap_or_default();
    match r.status {
        "pass" => println!("  PASS {}  {title}", r.id),
        "skip" => println!("  SKIP {}  {title}\n       skipped: {}", r.id, r.detail),
        _ => {
            println!("  FAIL {}  {title}", r.id);
            for f in &r.failures {
                println!("       - {}", f.replace('\n', "\n         "));
            }
        }
    }
}

/// One part's counts.
#[derive(Default)]
pub(crate) struct Tally {
    /// Vectors passed.
    pub(crate) passed: usize,
    /// Vectors failed.
    pub(crate) failed: usize,
    /// Vectors skipped.
    pub(crate) skipped: usize,
}

/// A run's counts, overall and per part.
pub(crate) struct Report {
    parts: BTreeMap<String, Tally>,
    /// Vectors passed.
    pub(crate) passed: usize,
    /// Vectors failed.
    pub(crate) failed: usize,
    /// Vectors skipped.
    pub(crate) skipped: usize,
}

impl Report {
    /// Counts `results`.
    pub(crate) fn new(results: &[(Value, VectorResult)]) -> Self {
        let mut parts: BTreeMap<String, Tally> = BTreeMap::new();
        for (vector, r) in results {
            let tally = parts.entry(part_of(vector)).or_default();
            match r.status {
                "pass" => tally.passed += 1,
                "skip" => tally.skipped += 1,
                _ => tally.failed += 1,
            }
        }
        let sum = |f: fn(&Tally) -> usize| parts.values().map(f).sum();
        Self {
            passed: sum(|t| t.passed),
            failed: sum(|t| t.failed),
            skipped: sum(|t| t.skipped),
            parts,
        }
    }

    /// The `conformance: N passed, M failed, K skipped` line.
    pub(crate) fn summary(&self) -> String {
        format!(
            "conformance: {} passed, {} failed, {} skipped",
            self.passed, self.failed, self.skipped
        )
    }

    /// The per-part table printed after a run.
    pub(crate) fn table(&self) -> String {
        let width = self.parts.keys().map(String::len).max().unwrap_or(4).max(4);
        let mut out = format!("per part:\n  {:<width$}  passed  failed  skipped\n", "part");
        for (part, t) in &self.parts {
            let _ = writeln!(
                out,
                "  {part:<width$}  {:>6}  {:>6}  {:>7}",
                t.passed, t.failed, t.skipped
            );
        }
        out
    }

    /// The CONFORMANCE.md this run writes.
    pub(crate) fn markdown(
        &self,
        results: &[(Value, VectorResult)],
        summaries: &[String],
    ) -> String {
        let mut md = String::new();
        let _ = writeln!(
            md,
            "# Conformance\n\n\
             <!-- Generated by `HOOKWIRE_WRITE_CONFORMANCE=1 cargo test -p hookwire-tests --test conformance`; do not edit. -->\n\n\
             hookwire's host runs the official AGENT-HOOKS-0.1 conformance vectors with every\n\
             scripted interceptor served as a gRPC interceptor service (hookwire-server on\n\
             127.0.0.1) and bound to the host as a remote interceptor; the scenario runs through\n\
             the reference agent loop of hookwire-client. Every vector runs three times: the services\n\
             called over the eight unary RPCs, over the `Multiplex` stream, and served by the hookwire\n\
             Python package (one Python process in front of the scripts, over the `Multiplex` stream:\n\
             each context decoded and encoded again by the package, each scripted verdict encoded by it\n\
             unvalidated). Each vector's scripted approval resolver\n\
             sits behind a hookwire approval service: the host reaches it with a `StreamResolver`\n\
             over the service's `Resolve` stream (request, context and echoed identity on the wire).\n\
             Model responses enter the host as the vector's own JSON text, decoded exactly.\n\n\
             ## Claim\n\n\
             `(hookwire, 0.1.0, agent-hooks/0.1, [{plain_caps}], [sequential/first_deny, sequential/run_all, parallel/strictest, parallel/unanimous], jcs-sha256, rust@hookwire-client 0.1.0)`\n\n\
             | Declared | Value |\n| --- | --- |\n\
             | Capabilities (§3.2, §13.1) | {caps} |\n\
             | Posture `tool_seam_host_error` (§6.2) | `{POSTURE}`: a host error at the tool seam is surfaced to the model as a tool error and the loop continues |\n\
             | Identity provider (§10.1) | `jcs-sha256`, content-derived (§10.2); `null` and custom providers are supported and exercised by the vectors that select them |\n\
             | Profiles and knobs (§7.2) | `sequential/first_deny` (`on_approval`: `stop`, `resume`), `sequential/run_all`, `parallel/strictest` (`on_transform_conflict`: `deny`, `approval`), `parallel/unanimous` (`on_disagreement`: `deny`, `approval`) |\n\
             | Modes (§8) | `enforce`, `evaluate_only` |\n\
             | Output (§12.1, §12.1a) | `buffered_output: false` with incremental mediation of streamed model output; exposure bound: {EXPOSURE_BOUND}. A deny terminates the stream and withholds the unreleased rest; residue no emission evaluated is self-denied `host_error:streaming_unsupported`; nothing withheld is persisted. A deny at `output` cannot retract segments already released. Buffered answers (and `Session::output`) release nothing before the `output` verdict, and what is released is the verdicted content |\n\
             | Exact JSON (§4.4) | `int64_json` and `bigint_json`: 64-bit integers are carried exactly; an integer literal beyond the 64-bit range in a model response's JSON text denies the emission `host_error:context_invalid` before dispatch, never rounded |\n\
             | Host declaration (§7.7) | declaration vectors build the host from the vector's document through hookwire's loader (`agent-hooks-declaration/1.0`) |\n\
             | Harness-side assertions | the runner of this SDK version does not assert `released_output` and `persisted_must_not_contain`; the harness asserts them (released text, and the agent's transcript as what is persisted) |\n\n\
             Runner: {RUNNER}. Vectors: {VECTOR_SOURCE}.\n\n\
             {summary}",
            plain_caps = CAPABILITIES.join(", "),
            caps = CAPABILITIES
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", "),
            summary = summaries
                .iter()
                .map(|s| format!("**{s}**"))
                .collect::<Vec<_>>()
                .join("\\\n"),
        );
        md.push_str("\n## Results per part\n\n| Part | Passed | Failed | Skipped |\n| --- | ---: | ---: | ---: |\n");
        for (part, t) in &self.parts {
            let _ = writeln!(
                md,
                "| `{part}` | {} | {} | {} |",
                t.passed, t.failed, t.skipped
            );
        }
        md.push_str(
            "\n## Vectors\n\n\
             Vector texts are not reproduced here; they ship in the wheel above.\n\n\
             | Vector | Part | Result |\n| --- | --- | --- |\n",
        );
        for (vector, r) in results {
            let status = match r.status {
                "pass" => "pass".to_owned(),
                "skip" => format!("skip: {}", r.detail),
                _ => "**fail**".to_owned(),
            };
            let _ = writeln!(
                md,
                "| {} | `{}` | {} |",
                r.id,
                part_of(vector),
                status.replace('|', "\\|")
            );
        }
        md
    }
}
