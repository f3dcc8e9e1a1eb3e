//! LiteLLM, the peer: installed by `scripts/litellm.sh` (pinned, its own
//! venv), started with `benches/peer/litellm.yaml` (the mock upstream as
//! its models, the custom guardrail of `hookwire_allow_guardrail.py` on
//! `pre_call` and `post_call`, no database) and as many workers as the
//! machine has cores, and checked before it is measured: every measured
//! route answers, and its guardrail refuses the probes at both hooks (so a
//! guardrail that does not run cannot pass for a cheap one).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::apis::{DENY_INPUT, DENY_OUTPUT};
use super::children::ASK_DENIED_ANSWER;
use super::load::{self, Http, Kind, Target};

/// How long LiteLLM may take to start answering (its workers each import
/// the whole proxy: 48 s and 143 s on this 2-core machine with other
/// builds running).
const START_TIMEOUT: Duration = Duration::from_secs(300);

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs `scripts/litellm.sh` (a no-op once installed) and returns the
/// `litellm` command it prints.
pub fn install() -> Result<PathBuf, String> {
    let script = root().join("scripts/litellm.sh");
    let out = Command::new("bash")
        .arg(&script)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("running {}: {e}", script.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} failed ({}): LiteLLM is not installed",
            script.display(),
            out.status
        ));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let path = stdout.lines().last().unwrap_or_default().trim();
    if path.is_empty() || !Path::new(path).exists() {
        return Err(format!(
            "{} printed no litellm command ({stdout:?})",
            script.display()
        ));
    }
    Ok(PathBuf::from(path))
}

/// The installed version (the venv's stamp), for the report.
pub fn version() -> String {
    std::fs::read_to_string(root().join(".cache/litellm-venv/.hookwire-litellm-version"))
        .map(|v| v.trim().to_owned())
        .unwrap_or_else(|_| "unknown".to_owned())
}

/// A running LiteLLM proxy: its process group (the supervisor and its
/// workers) is ended when dropped.
pub struct LiteLlm {
    child: Child,
    /// Its base URL.
    pub base: String,
    /// Its master key, which every request carries (LiteLLM refuses to
    /// start without one).
    pub key: String,
    /// The file its output goes to.
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for LiteLlm {
    fn drop(&mut self) {
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill")
            .args(["-TERM", "--", &group])
            .stderr(Stdio::null())
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = Command::new("kill")
            .args(["-KILL", "--", &group])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.wait();
    }
}

impl LiteLlm {
    /// The last lines of its output, for an error message.
    fn tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(25)..].join("\n")
    }

    /// Starts `litellm` on a free loopback port with `workers` workers,
    /// forwarding to the mock upstream at `upstream` (`http://HOST:PORT`),
    /// and waits until it answers its liveness route.
    pub async fn start(
        litellm: &Path,
        upstream: &str,
        workers: usize,
        http: &Http,
    ) -> Result<Self, String> {
        use std::os::unix::process::CommandExt;
        let dir = tempfile::tempdir().map_err(|e| format!("a folder for LiteLLM: {e}"))?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("a free port: {e}"))?
            .port();
        let log = dir.path().join("litellm.log");
        let out = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let err = out.try_clone().map_err(|e| format!("{e}"))?;
        let config = root().join("benches/peer/litellm.yaml");
        let key = master_key();
        let child = Command::new(litellm)
            .arg("--config")
            .arg(&config)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--num_workers", &workers.to_string()])
            .env("HOOKWIRE_PEER_OPENAI_BASE", format!("{upstream}/v1"))
            .env("HOOKWIRE_PEER_ANTHROPIC_BASE", upstream)
            // Its own state stays in the throwaway folder; nothing is
            // reported anywhere.
            .env("HOME", dir.path())
            .env("LITELLM_MASTER_KEY", &key)
            .env("LITELLM_TELEMETRY", "False")
            // The model cost map from the package, not fetched.
            .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            .env("LITELLM_LOG", "ERROR")
            .env("PYTHONUNBUFFERED", "1")
            .env_remove("DATABASE_URL")
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0)
            .spawn()
            .map_err(|e| format!("starting {}: {e}", litellm.display()))?;
        let mut proxy = Self {
            child,
            base: format!("http://127.0.0.1:{port}"),
            key,
            log,
            _dir: dir,
        };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Ok(Some(status)) = proxy.child.try_wait() {
                return Err(format!(
                    "LiteLLM exited while starting ({status}); its output:\n{}",
                    proxy.tail()
                ));
            }
            if proxy.live(http).await {
                return Ok(proxy);
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "LiteLLM did not answer within {START_TIMEOUT:?}; its output:\n{}",
                    proxy.tail()
                ));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    async fn live(&self, http: &Http) -> bool {
        let url = format!("{}/health/liveliness", self.base);
        http.get_ok(&url).await
    }

    /// Checks that `kind` answers through LiteLLM and that the guardrail
    /// runs at both hooks on it: a normal request succeeds, a request
    /// carrying the input marker and one whose answer carries the output
    /// marker do not.
    pub async fn check(&self, http: &Http, kind: Kind) -> Result<(), String> {
        let target = Target {
            label: "LiteLLM",
            base: self.base.clone(),
            key: self.key.clone(),
        };
        let with_output = |e: String| format!("{e}\nLiteLLM's output:\n{}", self.tail());
        load::once(http, &target, kind, "probe", 0)
            .await
            .map_err(with_output)?;
        // Refused before the model call: no complete answer comes back.
        let text = format!("{DENY_INPUT} probe");
        let (status, body) = load::send(http, &target, kind, "probe", &text).await?;
        if status == 200 && kind.api.complete(kind.stream, &body) {
            return Err(with_output(not_run("pre_call", kind, status)));
        }
        // Refused after it: the denied answer never reaches the client.
        let text = format!("{ASK_DENIED_ANSWER} probe");
        let (status, body) = load::send(http, &target, kind, "probe", &text).await?;
        if String::from_utf8_lossy(&body).contains(DENY_OUTPUT) {
            return Err(with_output(not_run("post_call", kind, status)));
        }
        Ok(())
    }
}

fn not_run(hook: &str, kind: Kind, status: u16) -> String {
    format!(
        "LiteLLM's guardrail did not refuse its {hook} probe on {} (status {status}): \
         it does not run there",
        kind.name()
    )
}

/// A master key for one run: unguessable enough for a proxy that listens
/// on loopback for a few minutes (the process id, the clock and the
/// standard library's per-process random hash keys).
fn master_key() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut words = Vec::new();
    for i in 0..4u64 {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(i);
        h.write_u32(std::process::id());
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        words.push(format!("{:016x}", h.finish()));
    }
    format!("sk-peer-{}", words.concat())
}
