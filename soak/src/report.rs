//! SOAK.md: the settings, the counts of both passes side by side, and the
//! closing line the issue asks for.

use crate::workload::Outcome;

/// `soak: emissions=N sessions=S replicas=R kills=K lost_records=L
/// sequence_gaps=G unrecorded_failures=U availability=A`.
pub fn line(o: &Outcome) -> String {
    format!(
        "soak: emissions={} sessions={} replicas={} kills={} lost_records={} sequence_gaps={} unrecorded_failures={} availability={:.5}",
        o.emissions,
        o.plan.sessions,
        o.plan.replicas,
        o.kills,
        o.lost_records(),
        o.sequence_gaps,
        o.unrecorded_failures,
        o.availability()
    )
}

/// One row of the table: its name and how a pass's value is shown.
type Row = (&'static str, fn(&Outcome) -> String);

/// The whole report, ending with the fleet's line.
pub fn markdown(fleet: &Outcome, single: &Outcome, smoke: bool) -> String {
    let p = &fleet.plan;
    let mut s = String::new();
    s.push_str("# Soak: an interceptor fleet under replica kills\n\n");
    if smoke {
        s.push_str("**Smoke run** (`--smoke`): a few seconds, not the soak.\n\n");
    }
    s.push_str(&format!(
        "Command: `cargo run --release -p hookwire-soak -- run` (this report: `--emissions {} --sessions {} --replicas {} --kill-every-ms {} --down-ms {} --think-ms {} --timeout-ms {}`).\n\n",
        p.emissions,
        p.sessions,
        p.replicas,
        p.kill_every.as_millis(),
        p.down_for.as_millis(),
        p.think.as_millis(),
        p.timeout.as_millis()
    ));
    s.push_str(&format!(
        "A host (in this process) binds one remote interceptor, `fleet`, at `pre_tool_call`, naming {} replica processes on loopback (allow-all interceptors served by `hookwire-server`). {} sessions each emit tool calls one at a time, pausing {} ms (±50%) between them, as an agent does between tool calls. Every {} ms one replica (round robin) is killed with SIGKILL — no drain, its connections reset — and restarted on the same port {} ms later. The same schedule then runs against a single replica for comparison.\n\n",
        p.replicas,
        p.sessions,
        p.think.as_millis(),
        p.kill_every.as_millis(),
        p.down_for.as_millis()
    ));
    s.push_str("What is counted: tool-call emissions made by the agent side; records received by the host's record sink (every emission, the sessions' start and input included, must arrive); sequence numbers per session in the received records (none missing or repeated); failures that reached the agent without a `host_error:*` record (an emission returning an error, a deny that is not a host error, or more host-error denies than host-error records); availability = tool calls allowed / tool calls made.\n\n");
    s.push_str(&format!(
        "| | {} replicas | 1 replica |\n| --- | --- | --- |\n",
        p.replicas
    ));
    let rows: [Row; 17] = [
        ("tool-call emissions", |o| o.emissions.to_string()),
        ("other emissions (start, input)", |o| o.opening.to_string()),
        ("records received", |o| o.records.to_string()),
        ("host_error records received", |o| {
            o.host_error_records.to_string()
        }),
        ("lost records", |o| o.lost_records().to_string()),
        ("sequence gaps", |o| o.sequence_gaps.to_string()),
        ("unrecorded failures", |o| o.unrecorded_failures.to_string()),
        ("replicas killed", |o| o.kills.to_string()),
        ("allowed", |o| o.allowed.to_string()),
        ("denied (host_error, by reason)", |o| {
            if o.host_errors.is_empty() {
                "0".into()
            } else {
                o.host_errors
                    .iter()
                    .map(|(r, n)| format!("{n} `{r}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        }),
        ("**availability**", |o| {
            format!("**{:.5}**", o.availability())
        }),
        ("p50 latency", |o| {
            format!("{:.2} ms", o.p50_us as f64 / 1000.0)
        }),
        ("p99 latency", |o| {
            format!("{:.2} ms", o.p99_us as f64 / 1000.0)
        }),
        ("max latency", |o| {
            format!("{:.2} ms", o.max_us as f64 / 1000.0)
        }),
        ("replica ejections / re-admissions", |o| {
            format!("{} / {}", o.ejections, o.readmissions)
        }),
        ("retries on another replica", |o| o.retries.to_string()),
        ("wall time", |o| format!("{:.1} s", o.elapsed.as_secs_f64())),
    ];
    for (name, value) in rows {
        s.push_str(&format!(
            "| {name} | {} | {} |\n",
            value(fleet),
            value(single)
        ));
    }
    s.push_str(&format!("\nSingle replica: `{}`\n\n", line(single)));
    s.push_str("How to read it: a kill fails the calls in flight on the killed replica at that instant (they may have reached its handler, so they are never retried: an interceptor call is a decision); they are denied as `host_error:interceptor_failed` with their records. Calls that find it refusing connections are sent to another replica within their deadline, and the replica is ejected at once, so with several replicas nothing else fails. With one replica every emission while it is down is denied at once (no timeout is waited out) until a probe notices it is back.\n\n");
    s.push_str(&line(fleet));
    s.push('\n');
    s
}
