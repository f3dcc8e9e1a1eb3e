//! The `throughput` section: emissions per second from many concurrent
//! sessions, called unary and over the `Multiplex` stream, against bare
//! tonic calls from as many tasks.

use std::sync::Arc;
use std::time::{Duration, Instant};

use hookwire::pb::interceptor_client::InterceptorClient;
use hookwire_client::{Host, Session};

use crate::child::{SERVER_PID, cpu_us};
use crate::measure::Samples;
use crate::report::Headline;
use crate::{Plan, fixtures, started};

/// Emissions per second from `concurrency` sessions against one remote
/// interceptor service, called unary and over the `Multiplex` stream, and
/// bare tonic calls per second from as many tasks on one channel,
/// alternating in rounds.
pub struct Throughput {
    /// Unary, stream, tonic.
    sides: [Side; 3],
}

/// One side's rates, latencies and CPU.
#[derive(Default)]
struct Side {
    rates: Vec<f64>,
    lat: Samples,
    /// CPU used by (client, server) and calls made.
    cpu: (f64, f64, usize),
}

impl Side {
    fn rate(&self) -> f64 {
        Samples(self.rates.clone()).median()
    }

    fn cpu_per_call(&self) -> (f64, f64) {
        let (c, s, n) = self.cpu;
        (c / n as f64, s / n as f64)
    }
}

impl Throughput {
    /// The headlines: unary and stream against tonic, and stream against
    /// unary.
    pub fn into_headlines(self, concurrency: usize) -> Vec<Headline> {
        let [unary, stream, tonic] = &self.sides;
        let main = concurrency == 64;
        let row = |label: String, a: &Side, b: &Side, key, target| {
            Headline::throughput(
                label,
                (a.rate(), a.cpu_per_call()),
                (b.rate(), b.cpu_per_call()),
                &a.lat,
                &b.lat,
                if main { key } else { "" },
                if main { target } else { None },
            )
        };
        vec![
            row(
                format!("throughput, {concurrency} concurrent sessions, unary, vs bare tonic"),
                unary,
                tonic,
                "throughput_vs_tonic",
                Some((0.8, true)),
            ),
            row(
                format!(
                    "throughput, {concurrency} concurrent sessions, Multiplex stream, vs bare tonic"
                ),
                stream,
                tonic,
                "stream_throughput_vs_tonic",
                Some((1.3, true)),
            ),
        ]
    }
}

/// Runs `concurrency` sessions of `unary` (a host calling unary), as many
/// of `stream` (a host on the stream), then as many bare tonic tasks,
/// rotating in rounds of [`Plan::throughput_window`].
pub async fn throughput(
    unary: &Host,
    stream: &Host,
    client: &InterceptorClient<tonic::transport::Channel>,
    request: &hookwire::pb::PreToolCallRequest,
    call: &hookwire_client::ToolCall,
    concurrency: usize,
    plan: Plan,
) -> Throughput {
    let mut sessions: [Vec<Arc<Session>>; 2] = [Vec::new(), Vec::new()];
    for (side, host) in [unary, stream].into_iter().enumerate() {
        for i in 0..concurrency {
            sessions[side].push(started(host, &format!("s-load-{side}-{i}")).await);
        }
    }
    let run_ours = |side: usize, window: Duration| {
        let tasks: Vec<_> = sessions[side]
            .iter()
            .map(|s| {
                let (s, mut call) = (s.clone(), call.clone());
                async move {
                    let mut lat = Vec::new();
                    let deadline = Instant::now() + window;
                    while Instant::now() < deadline {
                        let t = Instant::now();
                        fixtures::renumber(&mut call);
                        let e = s.pre_tool_call(&call).await.expect("emits");
                        assert!(e.proceeds(), "unexpected verdict {:?}", e.verdict());
                        lat.push(t.elapsed().as_secs_f64() * 1e6);
                    }
                    lat
                }
            })
            .collect();
        run_tasks(tasks)
    };
    let run_tonic = |window: Duration| {
        let tasks: Vec<_> = (0..concurrency)
            .map(|_| {
                let (mut c, req) = (client.clone(), request.clone());
                async move {
                    let mut lat = Vec::new();
                    let deadline = Instant::now() + window;
                    while Instant::now() < deadline {
                        let t = Instant::now();
                        c.pre_tool_call(tonic::Request::new(req.clone()))
                            .await
                            .expect("floor answers");
                        lat.push(t.elapsed().as_secs_f64() * 1e6);
                    }
                    lat
                }
            })
            .collect();
        run_tasks(tasks)
    };
    let run = |side: usize, window: Duration| async move {
        if side == 2 {
            run_tonic(window).await
        } else {
            run_ours(side, window).await
        }
    };
    let warm = plan.throughput_window / 4;
    for side in 0..3 {
        run(side, warm).await;
    }
    let mut sides: [Side; 3] = Default::default();
    let server = SERVER_PID.get().copied();
    for r in 0..plan.throughput_rounds {
        // Each side goes first, second and last in turn.
        for k in 0..3 {
            let side = (r + k) % 3;
            let (c0, s0) = (cpu_us(None), cpu_us(server));
            let (rate, lat) = run(side, plan.throughput_window).await;
            let acc = &mut sides[side];
            acc.cpu.0 += cpu_us(None) - c0;
            acc.cpu.1 += cpu_us(server) - s0;
            acc.cpu.2 += lat.len();
            acc.rates.push(rate);
            acc.lat.0.extend(lat);
        }
    }
    Throughput { sides }
}

/// Runs the tasks concurrently; returns completions per second and every
/// latency sample (the `node` section's windows too).
pub async fn run_tasks<F>(tasks: Vec<F>) -> (f64, Vec<f64>)
where
    F: std::future::Future<Output = Vec<f64>> + Send + 'static,
{
    let start = Instant::now();
    let handles: Vec<_> = tasks.into_iter().map(tokio::spawn).collect();
    let mut all = Vec::new();
    for h in handles {
        all.extend(h.await.expect("load task"));
    }
    let rate = all.len() as f64 / start.elapsed().as_secs_f64();
    (rate, all)
}
