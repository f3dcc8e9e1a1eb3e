//! One pass of the soak: a host whose binding `fleet` (at `pre_tool_call`)
//! names every replica, sessions emitting tool calls with a pause between
//! them while the kill schedule runs, and what is counted on both sides —
//! what the agent got back and what the record sink received.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hookwire::InterceptionPoint::{AgentStartup, Input, PreToolCall};
use hookwire::{AgentContext, InterceptionRecord, Interceptor, Manifest, Verdict, async_trait};
use hookwire_client::prometheus_client::encoding::text::encode;
use hookwire_client::prometheus_client::registry::Registry;
use hookwire_client::{Host, HostMetrics, InputRole, InterceptorBinding, RecordSink, ToolCall};
use serde_json::json;

use crate::error::SoakError;
use crate::fleet::Fleet;

/// What one pass does.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Tool-call emissions to make.
    pub emissions: u64,
    /// Concurrent sessions.
    pub sessions: usize,
    /// Replica processes.
    pub replicas: usize,
    /// One replica killed this often...
    pub kill_every: Duration,
    /// ...and restarted this much later.
    pub down_for: Duration,
    /// A session's pause between emissions (jittered ±50%).
    pub think: Duration,
    /// The binding's per-call timeout.
    pub timeout: Duration,
}

/// What one pass counted.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The plan it ran.
    pub plan: Plan,
    /// Tool-call emissions made.
    pub emissions: u64,
    /// Other emissions made (each session's start and input).
    pub opening: u64,
    /// Tool calls allowed.
    pub allowed: u64,
    /// Tool calls denied with a `host_error:*` reason, by reason.
    pub host_errors: Vec<(String, u64)>,
    /// Records the sink received.
    pub records: u64,
    /// Of those, records whose verdict is a `host_error:*` deny.
    pub host_error_records: u64,
    /// Sequence numbers missing or repeated across the sessions' records.
    pub sequence_gaps: u64,
    /// Failures that reached the agent without a `host_error:*` record:
    /// an emission that returned an error, a deny that is not a host
    /// error, or more host-error denies than host-error records.
    pub unrecorded_failures: u64,
    /// Replicas killed.
    pub kills: u64,
    /// Emission latency percentiles, in microseconds.
    pub p50_us: u64,
    /// See `p50_us`.
    pub p99_us: u64,
    /// See `p50_us`.
    pub max_us: u64,
    /// Wall time of the pass.
    pub elapsed: Duration,
    /// Replica ejections, re-admissions and retries, from the host's
    /// metrics.
    pub ejections: u64,
    /// See `ejections`.
    pub readmissions: u64,
    /// See `ejections`.
    pub retries: u64,
}

impl Outcome {
    /// Emissions whose record never reached the sink.
    pub fn lost_records(&self) -> u64 {
        (self.emissions + self.opening).saturating_sub(self.records)
    }

    /// The share of tool-call emissions allowed.
    pub fn availability(&self) -> f64 {
        if self.emissions == 0 {
            return 0.0;
        }
        self.allowed as f64 / self.emissions as f64
    }
}

/// Allows the start and input that open each session's turn.
struct Opening;

#[async_trait]
impl Interceptor for Opening {
    type Response = Verdict;

    fn manifest(&self) -> Manifest {
        hookwire::manifest("opening", env!("CARGO_PKG_VERSION"))
    }

    async fn intercept(&self, _ctx: &AgentContext) -> Verdict {
        Verdict::allow()
    }
}

/// The record sink's side of the count.
#[derive(Default)]
struct Received {
    records: AtomicU64,
    host_errors: AtomicU64,
    /// Every sequence number received, per session.
    sequences: Mutex<HashMap<String, Vec<i64>>>,
}

#[derive(Clone, Default)]
struct CountingSink(Arc<Received>);

impl RecordSink for CountingSink {
    fn record(&self, record: &InterceptionRecord) {
        self.0.records.fetch_add(1, Ordering::Relaxed);
        if record
            .verdict
            .reason
            .as_deref()
            .is_some_and(|r| r.starts_with("host_error:"))
        {
            self.0.host_errors.fetch_add(1, Ordering::Relaxed);
        }
        if let Ok(mut s) = self.0.sequences.lock() {
            s.entry(record.session_id.clone())
                .or_default()
                .push(record.sequence);
        }
    }
}

/// What one session saw.
#[derive(Default)]
struct SessionTally {
    emissions: u64,
    opening: u64,
    allowed: u64,
    host_errors: HashMap<String, u64>,
    /// Errors and non-host-error denies.
    unrecorded: u64,
    latencies_us: Vec<u32>,
}

/// Runs one pass: starts the replicas, the host and the sessions, runs the
/// kill schedule until the emissions are made, and counts.
pub async fn soak(plan: Plan) -> Result<Outcome, SoakError> {
    let fleet = Fleet::start(plan.replicas).await?;
    let sink = CountingSink::default();
    let mut registry = Registry::default();
    let metrics = HostMetrics::register(&mut registry);
    let host = Arc::new(
        Host::builder("soak-agent", "hookwire")
            .bind(InterceptorBinding::local("opening", Opening).at([AgentStartup, Input]))
            .bind(
                InterceptorBinding::remote_replicas("fleet", fleet.endpoints())
                    .timeout(plan.timeout)
                    .at([PreToolCall]),
            )
            .record_sink(sink.clone())
            .metrics(metrics)
            .build()?,
    );
    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let schedule = tokio::spawn(fleet.run_schedule(plan.kill_every, plan.down_for, stop.clone()));
    let claimed = Arc::new(AtomicU64::new(0));
    let mut sessions = Vec::with_capacity(plan.sessions);
    for s in 0..plan.sessions {
        let (host, claimed, plan) = (host.clone(), claimed.clone(), plan.clone());
        sessions.push(tokio::spawn(async move {
            session(&host, s, &claimed, &plan).await
        }));
    }
    let mut tally = SessionTally::default();
    for s in sessions {
        let t = s.await.unwrap_or_else(|_| SessionTally {
            unrecorded: 1,
            ..SessionTally::default()
        });
        tally.emissions += t.emissions;
        tally.opening += t.opening;
        tally.allowed += t.allowed;
        tally.unrecorded += t.unrecorded;
        for (reason, n) in t.host_errors {
            *tally.host_errors.entry(reason).or_default() += n;
        }
        tally.latencies_us.extend(t.latencies_us);
    }
    let elapsed = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    let (fleet, kills) = schedule.await.expect("the kill schedule ran")?;
    fleet.stop().await;

    // Records may still be on their way to the sink: wait until the count
    // stops moving (at most a few seconds).
    let expected = tally.emissions + tally.opening;
    let settle = Instant::now();
    let mut last = u64::MAX;
    while settle.elapsed() < Duration::from_secs(5) {
        let now = sink.0.records.load(Ordering::Relaxed);
        if now >= expected || now == last {
            break;
        }
        last = now;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let received = &sink.0;
    let records = received.records.load(Ordering::Relaxed);
    let host_error_records = received.host_errors.load(Ordering::Relaxed);
    let sequence_gaps = received
        .sequences
        .lock()
        .map(|mut s| s.values_mut().map(|seqs| gaps(seqs)).sum())
        .unwrap_or(u64::MAX);
    let denied_host_error: u64 = tally.host_errors.values().sum();
    let unrecorded_failures =
        tally.unrecorded + denied_host_error.saturating_sub(host_error_records);

    tally.latencies_us.sort_unstable();
    let pct = |p: f64| -> u64 {
        let v = &tally.latencies_us;
        if v.is_empty() {
            return 0;
        }
        u64::from(v[((v.len() - 1) as f64 * p).round() as usize])
    };
    let mut text = String::new();
    let _ = encode(&mut text, &registry);
    let sum = |name: &str| -> u64 {
        text.lines()
            .filter(|l| l.starts_with(name) && l.contains("interceptor=\"fleet\""))
            .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
            .sum::<f64>() as u64
    };
    let mut host_errors: Vec<(String, u64)> = tally.host_errors.into_iter().collect();
    host_errors.sort();
    Ok(Outcome {
        emissions: tally.emissions,
        opening: tally.opening,
        allowed: tally.allowed,
        host_errors,
        records,
        host_error_records,
        sequence_gaps,
        unrecorded_failures,
        kills,
        p50_us: pct(0.50),
        p99_us: pct(0.99),
        max_us: pct(1.0),
        elapsed,
        ejections: sum("hookwire_host_replica_ejections_total"),
        readmissions: sum("hookwire_host_replica_readmissions_total"),
        retries: sum("hookwire_host_replica_retries_total"),
        plan,
    })
}

/// Sequence numbers missing between the lowest and highest received, plus
/// those received twice, plus a first number other than 0.
fn gaps(seqs: &mut [i64]) -> u64 {
    seqs.sort_unstable();
    let (Some(&first), Some(&last)) = (seqs.first(), seqs.last()) else {
        return 0;
    };
    let distinct = 1 + seqs.windows(2).filter(|w| w[0] != w[1]).count() as i64;
    let duplicates = seqs.len() as i64 - distinct;
    let missing = (last - first + 1) - distinct;
    (missing + duplicates + first.abs()) as u64
}

/// One session: start, input, then tool calls until the pass's emissions
/// are claimed, pausing between them.
async fn session(host: &Host, index: usize, claimed: &AtomicU64, plan: &Plan) -> SessionTally {
    let mut t = SessionTally::default();
    let Ok(session) = host.session(format!("soak-{index}")) else {
        t.unrecorded += 1;
        return t;
    };
    // Spread the sessions' first emissions over one pause.
    tokio::time::sleep(plan.think.mul_f64(fastrand::f64())).await;
    for opening in 0..2 {
        t.opening += 1;
        let outcome = if opening == 0 {
            session.start(["bash"]).await
        } else {
            session.input(json!("go"), InputRole::User).await
        };
        if !matches!(outcome, Ok(ref e) if e.proceeds()) {
            t.unrecorded += 1;
            return t;
        }
    }
    let mut n = 0u64;
    while claimed.fetch_add(1, Ordering::Relaxed) < plan.emissions {
        let call = ToolCall::new(format!("c{n}"), "bash", json!({"cmd": "ls"}));
        n += 1;
        t.emissions += 1;
        let sent = Instant::now();
        let outcome = session.pre_tool_call(&call).await;
        t.latencies_us
            .push(u32::try_from(sent.elapsed().as_micros()).unwrap_or(u32::MAX));
        match outcome {
            Ok(e) if e.proceeds() => t.allowed += 1,
            Ok(e) => match e.reason() {
                Some(r) if r.starts_with("host_error:") => {
                    *t.host_errors.entry(r.to_owned()).or_default() += 1;
                }
                _ => t.unrecorded += 1,
            },
            Err(_) => t.unrecorded += 1,
        }
        tokio::time::sleep(plan.think.mul_f64(0.5 + fastrand::f64())).await;
    }
    t
}

#[cfg(test)]
mod tests {
    use super::gaps;

    #[test]
    fn gaps_count_missing_repeated_and_late_starts() {
        assert_eq!(gaps(&mut []), 0);
        assert_eq!(gaps(&mut [2, 0, 1, 3]), 0);
        assert_eq!(gaps(&mut [0, 1, 3]), 1);
        assert_eq!(gaps(&mut [0, 1, 1, 2]), 1);
        assert_eq!(gaps(&mut [1, 2]), 1);
    }
}
