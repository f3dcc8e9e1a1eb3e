//! `--profile <what> [n]`: one operation run `n` times for a profiler, and
//! `parts`, native timings of the engine's per-emission work.

use std::sync::Arc;
use std::time::Instant;

use hookwire::Profile;
use hookwire::pb::interceptor_client::InterceptorClient;

use crate::child::Endpoints;
use crate::fixtures::{self, Chain};
use crate::growth::sessions_load;
use crate::measure::{self, CanonEmit, Emit, FloorCall, Samples};
use crate::{KIB, REMOTE_TIMEOUT, started};

/// `--profile <what> [n]`: only `n` runs of one operation (after a short
/// warm-up), for a profiler such as `valgrind --tool=callgrind`. `what` is
/// `remote` (unary), `stream`, `floor`, `local` or `canon`, or the
/// 64-session `concurrent`, `concurrent-stream`, `concurrent-floor`.
pub async fn profile(what: &str, n: usize, ep: &Endpoints) {
    let args = fixtures::tool_args(KIB);
    let call = fixtures::tool_call(&args);
    match what {
        "remote" | "stream" => {
            // `remote` calls unary (the service declares no stream),
            // `stream` over the Multiplex stream.
            let endpoint = if what == "remote" {
                &ep.unary
            } else {
                &ep.allow
            };
            let host =
                fixtures::remote_host(endpoint, 1, Profile::SequentialFirstDeny, REMOTE_TIMEOUT);
            let mut op = Emit {
                session: started(&host, "s-profile").await,
                call,
            };
            measure::sample(&mut op, n, &mut Samples::default()).await;
        }
        "floor" | "floor-deadline" => {
            let mut op = FloorCall {
                client: InterceptorClient::new(measure::channel(&ep.floor).await),
                request: fixtures::floor_request(&args),
                deadline: (what == "floor-deadline").then_some(REMOTE_TIMEOUT),
            };
            measure::sample(&mut op, n, &mut Samples::default()).await;
        }
        "local" => {
            let host = fixtures::local_host(Chain::allow(1));
            let mut op = Emit {
                session: started(&host, "s-profile").await,
                call,
            };
            measure::sample(&mut op, n, &mut Samples::default()).await;
        }
        "canon" => {
            let mut op = CanonEmit {
                emitter: fixtures::canon_emitter(Chain::allow(1)),
                builder: fixtures::canon_builder("s-profile"),
                args: Arc::new(args),
            };
            measure::sample(&mut op, n, &mut Samples::default()).await;
        }
        "concurrent" | "concurrent-stream" | "concurrent-floor" => {
            // 64 sessions (or tonic tasks) with n/64 calls each, all at once.
            let endpoint = if what == "concurrent-stream" {
                &ep.allow
            } else {
                &ep.unary
            };
            let host =
                fixtures::remote_host(endpoint, 1, Profile::SequentialFirstDeny, REMOTE_TIMEOUT);
            let client = InterceptorClient::new(measure::channel(&ep.floor).await);
            let request = fixtures::floor_request(&args);
            let mut handles = Vec::new();
            for i in 0..64 {
                let session = started(&host, &format!("s-{i}")).await;
                let (mut call, mut client, request) =
                    (call.clone(), client.clone(), request.clone());
                let floor = what == "concurrent-floor";
                handles.push(tokio::spawn(async move {
                    for _ in 0..n / 64 {
                        if floor {
                            client
                                .pre_tool_call(tonic::Request::new(request.clone()))
                                .await
                                .expect("floor answers");
                        } else {
                            fixtures::renumber(&mut call);
                            session.pre_tool_call(&call).await.expect("emits");
                        }
                    }
                }));
            }
            for h in handles {
                h.await.expect("task");
            }
        }
        "parts" => parts(&args, n),
        "policy" => crate::policy::profile(n),
        "gateway" => {
            if let Err(e) = crate::peer::profile::profile(n).await {
                panic!("--profile gateway: {e}");
            }
        }
        "sessions" => {
            let host = fixtures::local_host(Chain::allow(1));
            for sessions in [1usize, 10, 100, 1000] {
                let per = (n / sessions).max(2);
                let (us, mem, per_open) = sessions_load(&host, &call, sessions, per).await;
                println!(
                    "{sessions:>5} sessions x {per:>5}: {us:>8.1} µs/emission, {:.0} B, {:.0} allocs per emission, {per_open:.0} B per open session",
                    mem.0, mem.1
                );
            }
        }
        other => panic!("unknown --profile target {other:?}"),
    }
}

/// Native time of each piece of work an emission does with the context,
/// `n` runs each, printed as medians of batches.
fn parts(args: &serde_json::Value, n: usize) {
    use hookwire::ContextLimits;
    use hookwire::wire::{context_from_request, context_to_request};
    let ctx = fixtures::context(args);
    let limits = ContextLimits::default();
    let request = context_to_request(&ctx).expect("encodes");
    let call = fixtures::tool_call(args);
    let time = |name: &str, f: &mut dyn FnMut()| {
        let mut batches = Samples::default();
        for _ in 0..20 {
            let t = Instant::now();
            for _ in 0..n / 20 {
                f();
            }
            batches
                .0
                .push(t.elapsed().as_secs_f64() * 1e6 / (n / 20) as f64);
        }
        println!("{name:<28} {:>8.2} µs", batches.median());
    };
    time("validate", &mut || assert!(ctx.validate().is_ok()));
    time("check_limits", &mut || {
        assert!(ctx.check_limits(&limits).is_ok())
    });
    time("jcs_sha256_identity", &mut || {
        assert!(ctx.jcs_sha256_identity(&limits).is_ok());
    });
    time("identity preimage only", &mut || {
        let mut s = String::with_capacity(256);
        assert!(ctx.write_identity_preimage(&limits, &mut s).is_ok());
    });
    time("context_to_request", &mut || {
        assert!(context_to_request(&ctx).is_ok());
    });
    time("clone request", &mut || {
        drop(std::hint::black_box(request.clone()))
    });
    time("context_from_request", &mut || {
        assert!(context_from_request(request.clone()).is_ok());
    });
    time("clone tool args", &mut || {
        drop(std::hint::black_box(call.args.clone()))
    });
    time("to_value tool args", &mut || {
        drop(std::hint::black_box(serde_json::to_value(&call.args)))
    });
    time("clone + drop context", &mut || {
        drop(std::hint::black_box(ctx.clone()))
    });
    let text = hookwire::json::encode(args);
    time("json::decode (args)", &mut || {
        assert!(hookwire::json::decode(&text).is_ok());
    });
    time("serde_json::from_str (args)", &mut || {
        assert!(serde_json::from_str::<serde_json::Value>(&text).is_ok());
    });
    time("json::encode (args)", &mut || {
        drop(std::hint::black_box(hookwire::json::encode(args)));
    });
}
