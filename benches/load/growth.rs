//! The `growth` section: time and memory per emission as the context, the
//! chain and the number of sessions grow; and the many-sessions load that
//! `--profile sessions` also runs.

use std::sync::Arc;
use std::time::Instant;

use crate::allocator::Counted;
use hookwire::Profile;
use hookwire::pb::interceptor_client::InterceptorClient;
use hookwire_client::{Host, InputRole};

use crate::child::Endpoints;
use crate::fixtures::{self, Chain};
use crate::measure::{self, CanonEmit, Emit, FloorCall, allocs_per_op, interleaved};
use crate::report::{self, Growth};
use crate::{KIB, Plan, REMOTE_TIMEOUT, started};

/// Time and memory per emission as the context, the chain and the number
/// of sessions grow.
pub async fn growth(
    plan: Plan,
    ep: &Endpoints,
    floor_channel: &tonic::transport::Channel,
) -> Growth {
    let s = plan.growth_scale;
    let mut g = Growth::default();

    // Context size: 1 allow interceptor.
    for (label, bytes, per_round) in [
        ("1 KiB", KIB, 50 * s),
        ("100 KiB", 100 * KIB, 5 * s),
        ("1 MiB", 1024 * KIB, s),
    ] {
        let args = fixtures::tool_args(bytes);
        let call = fixtures::tool_call(&args);
        let local = fixtures::local_host(Chain::allow(1));
        let mut local = Emit {
            session: started(&local, "s-size").await,
            call: call.clone(),
        };
        let mut canon = CanonEmit {
            emitter: fixtures::canon_emitter(Chain::allow(1)),
            builder: fixtures::canon_builder("s-size"),
            args: Arc::new(args.clone()),
        };
        let remote =
            fixtures::remote_host(&ep.allow, 1, Profile::SequentialFirstDeny, REMOTE_TIMEOUT);
        let mut remote = Emit {
            session: started(&remote, "s-size").await,
            call,
        };
        let mut floor = FloorCall {
            client: InterceptorClient::new(floor_channel.clone())
                .max_decoding_message_size(16 * 1024 * 1024),
            request: fixtures::floor_request(&args),
            deadline: None,
        };
        let rounds = 4;
        let (l, c) = interleaved(&mut local, &mut canon, 2, rounds, per_round).await;
        let (r, f) = interleaved(&mut remote, &mut floor, 2, rounds, per_round).await;
        let n = per_round.max(3);
        let mem = [
            allocs_per_op(&mut local, n).await,
            allocs_per_op(&mut canon, n).await,
            allocs_per_op(&mut remote, n).await,
            allocs_per_op(&mut floor, n).await,
        ];
        g.sizes.push(report::GrowthRow {
            label: format!("{label} ({} B request)", fixtures::request_len(&args)),
            times: vec![l.median(), c.median(), r.median(), f.median()],
            memory: mem.to_vec(),
        });
    }

    // Chain length: in-process (hookwire, canonical) and remote (sequential
    // and parallel), 1 KiB context.
    let args = fixtures::tool_args(KIB);
    let call = fixtures::tool_call(&args);
    for n in [1, 4, 16] {
        let local = fixtures::local_host(Chain::allow(n));
        let mut local = Emit {
            session: started(&local, "s-chain").await,
            call: call.clone(),
        };
        let mut canon = CanonEmit {
            emitter: fixtures::canon_emitter(Chain::allow(n)),
            builder: fixtures::canon_builder("s-chain"),
            args: Arc::new(args.clone()),
        };
        let seq = fixtures::remote_host(&ep.allow, n, Profile::SequentialFirstDeny, REMOTE_TIMEOUT);
        let mut seq = Emit {
            session: started(&seq, "s-chain").await,
            call: call.clone(),
        };
        let par = fixtures::remote_host(&ep.allow, n, Profile::ParallelStrictest, REMOTE_TIMEOUT);
        let mut par = Emit {
            session: started(&par, "s-chain").await,
            call: call.clone(),
        };
        let per_round = 40 * s / n.max(1) + 5;
        let (l, c) = interleaved(&mut local, &mut canon, 20, 4, per_round).await;
        let (r, p) = interleaved(&mut seq, &mut par, 20, 4, per_round).await;
        let m = per_round.max(10);
        let mem = [
            allocs_per_op(&mut local, m).await,
            allocs_per_op(&mut canon, m).await,
            allocs_per_op(&mut seq, m).await,
            allocs_per_op(&mut par, m).await,
        ];
        g.chains.push(report::GrowthRow {
            label: format!("{n}"),
            times: vec![l.median(), c.median(), r.median(), p.median()],
            memory: mem.to_vec(),
        });
    }

    // Sessions: open N at once, each emitting concurrently.
    for sessions in [1usize, 1000] {
        let per_session = (2500 * s).div_ceil(sessions).max(10);
        let local = fixtures::local_host(Chain::allow(1));
        let remote =
            fixtures::remote_host(&ep.allow, 1, Profile::SequentialFirstDeny, REMOTE_TIMEOUT);
        let (ours_us, ours_mem, ours_session) =
            sessions_load(&local, &call, sessions, per_session).await;
        let (canon_us, canon_mem, canon_session) =
            canon_sessions_load(&args, sessions, per_session).await;
        let (remote_us, remote_mem, _) = sessions_load(&remote, &call, sessions, per_session).await;
        g.sessions.push(report::SessionRow {
            sessions,
            times: vec![ours_us, canon_us, remote_us],
            memory: vec![ours_mem, canon_mem, remote_mem],
            per_session: vec![ours_session, canon_session],
        });
    }
    g
}

/// Opens `sessions` sessions of `host` (started), then runs `per_session`
/// emissions in each, all sessions released at once (their tasks are
/// spawned first). Returns wall time per emission (µs), allocations per
/// emission, and live bytes per open session.
pub async fn sessions_load(
    host: &Host,
    call: &hookwire_client::ToolCall,
    sessions: usize,
    per_session: usize,
) -> (f64, (f64, f64), f64) {
    let region = Counted::start();
    let mut open = Vec::with_capacity(sessions);
    for i in 0..sessions {
        let s = host.session(format!("s-many-{i}")).expect("session");
        open.push(Arc::new(s));
    }
    let per_open = measure::live_bytes(&region) / sessions as f64;
    for s in &open {
        let e = s.start([fixtures::TOOL]).await.expect("start");
        assert!(e.proceeds());
        let e = s
            .input(serde_json::json!("load"), InputRole::User)
            .await
            .expect("input");
        assert!(e.proceeds());
    }
    let gate = Arc::new(tokio::sync::Barrier::new(sessions + 1));
    let handles: Vec<_> = open
        .iter()
        .map(|s| {
            let (s, mut call, gate) = (s.clone(), call.clone(), gate.clone());
            tokio::spawn(async move {
                gate.wait().await;
                for _ in 0..per_session {
                    fixtures::renumber(&mut call);
                    let e = s.pre_tool_call(&call).await.expect("emits");
                    assert!(e.proceeds());
                }
            })
        })
        .collect();
    released(gate, handles, sessions * per_session, per_open).await
}

/// Releases the session tasks waiting at `gate` all at once and times
/// them to the end: (µs per emission, allocations per emission, the
/// given live bytes per open session).
async fn released(
    gate: Arc<tokio::sync::Barrier>,
    handles: Vec<tokio::task::JoinHandle<()>>,
    emissions: usize,
    per_open: f64,
) -> (f64, (f64, f64), f64) {
    let region = Counted::start();
    let start = Instant::now();
    gate.wait().await;
    for h in handles {
        h.await.expect("session task");
    }
    let total = emissions as f64;
    let us = start.elapsed().as_secs_f64() * 1e6 / total;
    let st = region.change();
    let mem = (
        (st.bytes_allocated as f64 + st.bytes_reallocated.max(0) as f64) / total,
        (st.allocations + st.reallocations) as f64 / total,
    );
    (us, mem, per_open)
}

/// The canonical emitter's counterpart of [`sessions_load`]: one emitter
/// and one context builder per session (its emitter is per session).
async fn canon_sessions_load(
    args: &serde_json::Value,
    sessions: usize,
    per_session: usize,
) -> (f64, (f64, f64), f64) {
    let args = Arc::new(args.clone());
    let region = Counted::start();
    let mut open = Vec::with_capacity(sessions);
    for i in 0..sessions {
        open.push(CanonEmit {
            emitter: fixtures::canon_emitter(Chain::allow(1)),
            builder: fixtures::canon_builder(&format!("s-many-{i}")),
            args: Arc::clone(&args),
        });
    }
    let per_open = measure::live_bytes(&region) / sessions as f64;
    let gate = Arc::new(tokio::sync::Barrier::new(sessions + 1));
    let handles: Vec<_> = open
        .into_iter()
        .map(|mut op| {
            let gate = gate.clone();
            tokio::spawn(async move {
                gate.wait().await;
                for _ in 0..per_session {
                    measure::Op::once(&mut op).await;
                }
            })
        })
        .collect();
    released(gate, handles, sessions * per_session, per_open).await
}
