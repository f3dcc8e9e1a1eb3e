//! A throwaway PostgreSQL cluster for tests: `initdb` into a fresh
//! directory, the server on a free loopback port, removed when the
//! [`PgCluster`] is dropped (also when the test fails and unwinds).
//!
//! Debian's PostgreSQL server refuses to run as root, and tests run as
//! root: the cluster then runs as the `postgres` user (`runuser -u
//! postgres`), in a directory it owns. As any other user it runs as that
//! user. The binaries come from `$PG_BIN` or the newest
//! `/usr/lib/postgresql/<version>/bin` (`scripts/setup.sh` installs
//! Debian's `postgresql-15` when they are missing).
//!
//! A test process killed outright cannot clean up after itself; the next
//! [`PgCluster::start`] stops and removes clusters left by processes that
//! no longer exist.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

/// Prefix of every cluster directory under the temporary directory.
const DIR_PREFIX: &str = "hookwire-pg-";

/// The database superuser the clusters are created with.
pub const PG_USER: &str = "hookwire";

/// A running throwaway cluster. Dropping it stops the server and removes
/// its directory.
#[derive(Debug)]
pub struct PgCluster {
    dir: PathBuf,
    bin: PathBuf,
    port: u16,
    as_postgres: bool,
}

/// Where the PostgreSQL server binaries are, if anywhere.
pub fn postgres_bin() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("PG_BIN") {
        return Some(PathBuf::from(dir));
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn describe(what: &str, out: &Output) -> String {
    format!(
        "{what} failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

impl PgCluster {
    /// Starts a fresh cluster, or says why it cannot (binaries missing,
    /// `initdb` or the server failing), with what to do about it.
    pub fn start() -> Result<Self, String> {
        let bin = postgres_bin().ok_or_else(|| {
            "PostgreSQL server binaries not found (no /usr/lib/postgresql/*/bin/initdb; \
             set PG_BIN): run scripts/setup.sh as root, it installs Debian's postgresql-15"
                .to_owned()
        })?;
        remove_abandoned(&bin);
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "{DIR_PREFIX}{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let as_postgres = is_root();
        let mut cluster = Self {
            dir,
            bin,
            port: 0,
            as_postgres,
        };
        if as_postgres {
            let out = Command::new("chown")
                .arg("postgres:")
                .arg(&cluster.dir)
                .output()
                .map_err(|e| format!("chown: {e}"))?;
            if !out.status.success() {
                return Err(describe("chown postgres (is there a postgres user?)", &out));
            }
        }
        let data = cluster.dir.join("data");
        let out = cluster
            .pg("initdb")
            .arg("-D")
            .arg(&data)
            .args(["-A", "trust", "-U", PG_USER, "--no-sync", "-E", "UTF8"])
            .output()
            .map_err(|e| format!("initdb: {e}"))?;
        if !out.status.success() {
            return Err(describe("initdb", &out));
        }
        // A port may be taken between probing and binding: try a few.
        let mut last = String::new();
        for _ in 0..5 {
            cluster.port = free_port().map_err(|e| format!("no free port: {e}"))?;
            let options = format!(
                "-h 127.0.0.1 -p {} -k {} -c fsync=off -c synchronous_commit=off -c full_page_writes=off",
                cluster.port,
                cluster.dir.display()
            );
            let out = cluster
                .pg("pg_ctl")
                .arg("-D")
                .arg(&data)
                .args(["-o", &options, "-l"])
                .arg(cluster.dir.join("log"))
                .args(["-w", "-t", "30", "start"])
                .output()
                .map_err(|e| format!("pg_ctl start: {e}"))?;
            if out.status.success() {
                return Ok(cluster);
            }
            last = format!(
                "{}; server log: {}",
                describe("pg_ctl start", &out),
                std::fs::read_to_string(cluster.dir.join("log")).unwrap_or_default()
            );
        }
        Err(last)
    }

    /// A command running PostgreSQL binary `name` as the cluster's user.
    fn pg(&self, name: &str) -> Command {
        let program = self.bin.join(name);
        let mut command = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        };
        command.stdin(Stdio::null());
        command
    }

    /// The server's port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL of database `postgres` (which always exists).
    pub fn url(&self) -> String {
        self.database_url("postgres")
    }

    /// The URL of database `name` (see [`create_database`](Self::create_database)).
    pub fn database_url(&self, name: &str) -> String {
        format!("postgres://{PG_USER}@127.0.0.1:{}/{name}", self.port)
    }

    /// Creates database `name` and returns its URL: one per test keeps
    /// tests sharing a cluster apart.
    pub fn create_database(&self, name: &str) -> Result<String, String> {
        let out = self
            .pg("createdb")
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                PG_USER,
                name,
            ])
            .output()
            .map_err(|e| format!("createdb: {e}"))?;
        if !out.status.success() {
            return Err(describe("createdb", &out));
        }
        Ok(self.database_url(name))
    }

    /// The cluster's directory (data, socket, log).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn stop(&self) {
        let _ = self
            .pg("pg_ctl")
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["-m", "immediate", "-w", "-t", "30", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Stops and removes clusters whose test process is gone.
fn remove_abandoned(bin: &Path) {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(DIR_PREFIX)) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let stale = PgCluster {
            dir: entry.path(),
            bin: bin.to_owned(),
            port: 0,
            as_postgres: is_root(),
        };
        // Dropping stops its server (if any) and removes it.
        drop(stale);
    }
}
