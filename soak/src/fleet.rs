//! The replica processes: each an allow-all interceptor served by this
//! binary in `replica` mode on a loopback port of its own, killed with
//! SIGKILL and restarted on the same port by the kill schedule.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use hookwire::{AgentContext, Interceptor, Manifest, Verdict, async_trait};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::error::SoakError;

/// How long a replica process may take to start listening.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// The policy every replica serves: allow everything (the soak measures
/// the fleet, not a policy).
struct AllowAll;

#[async_trait]
impl Interceptor for AllowAll {
    type Response = Verdict;

    fn manifest(&self) -> Manifest {
        hookwire::manifest("soak-replica", env!("CARGO_PKG_VERSION"))
    }

    async fn intercept(&self, _ctx: &AgentContext) -> Verdict {
        Verdict::allow()
    }
}

/// `replica` mode: serves [`AllowAll`] on `listen` until killed, after
/// printing `listening` once the port is bound.
pub fn serve_replica(listen: &str) -> Result<(), SoakError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(SoakError::Runtime)?;
    let failed = |reason: String| SoakError::Replica { index: 0, reason };
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|e| failed(format!("bind {listen}: {e}")))?;
        println!("listening");
        hookwire_server::Server::builder()
            .service(AllowAll)
            .serve_with_listener(listener, std::future::pending())
            .await
            .map_err(|e| failed(e.to_string()))
    })
}

/// The running replica processes of one pass.
pub struct Fleet {
    exe: PathBuf,
    addrs: Vec<SocketAddr>,
    children: Vec<Option<Child>>,
}

impl Fleet {
    /// Starts `n` replica processes, each on a free loopback port.
    pub async fn start(n: usize) -> Result<Self, SoakError> {
        let exe = std::env::current_exe().map_err(|e| SoakError::Replica {
            index: 0,
            reason: format!("where is this binary: {e}"),
        })?;
        let mut addrs = Vec::with_capacity(n);
        for index in 0..n {
            let probe = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map_err(|e| SoakError::Replica {
                    index,
                    reason: format!("no free port: {e}"),
                })?;
            addrs.push(probe);
        }
        let mut fleet = Self {
            exe,
            addrs,
            children: (0..n).map(|_| None).collect(),
        };
        for i in 0..n {
            fleet.spawn(i).await?;
        }
        Ok(fleet)
    }

    /// The replicas' endpoint URLs.
    pub fn endpoints(&self) -> Vec<String> {
        self.addrs.iter().map(|a| format!("http://{a}")).collect()
    }

    /// Starts replica `index` and waits until it listens; a port still
    /// held by the killed process is retried for a while.
    async fn spawn(&mut self, index: usize) -> Result<(), SoakError> {
        let failed = |reason: String| SoakError::Replica { index, reason };
        let deadline = tokio::time::Instant::now() + START_TIMEOUT;
        loop {
            let mut child = Command::new(&self.exe)
                .args(["replica", "--listen", &self.addrs[index].to_string()])
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .kill_on_drop(true)
                .spawn()
                .map_err(|e| failed(format!("spawn: {e}")))?;
            let stdout = child.stdout.take().expect("piped");
            let mut line = String::new();
            let read =
                tokio::time::timeout_at(deadline, BufReader::new(stdout).read_line(&mut line))
                    .await;
            if matches!(read, Ok(Ok(_))) && line.trim() == "listening" {
                self.children[index] = Some(child);
                return Ok(());
            }
            let _ = child.kill().await;
            if tokio::time::Instant::now() >= deadline {
                return Err(failed("did not start listening".into()));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Kills replica `index` with SIGKILL and reaps it.
    pub async fn kill(&mut self, index: usize) {
        if let Some(mut child) = self.children[index].take() {
            let _ = child.kill().await;
        }
    }

    /// Kills one replica (round robin) every `every`, restarting it after
    /// `down_for`, until `stop`; returns the fleet and how many kills.
    pub async fn run_schedule(
        mut self,
        every: Duration,
        down_for: Duration,
        stop: Arc<AtomicBool>,
    ) -> Result<(Self, u64), SoakError> {
        let mut kills = 0u64;
        loop {
            let mut waited = Duration::ZERO;
            while waited < every {
                if stop.load(Ordering::Relaxed) {
                    return Ok((self, kills));
                }
                let step = Duration::from_millis(20).min(every - waited);
                tokio::time::sleep(step).await;
                waited += step;
            }
            let index = (kills % self.addrs.len() as u64) as usize;
            self.kill(index).await;
            kills += 1;
            tokio::time::sleep(down_for).await;
            self.spawn(index).await?;
        }
    }

    /// Kills every replica.
    pub async fn stop(mut self) {
        for i in 0..self.children.len() {
            self.kill(i).await;
        }
    }
}
