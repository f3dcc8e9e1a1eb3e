//! The `throughput` section: emissions per second from many concurrent
//! sessions against bare tonic calls from as many tasks.

use std::time::{Duration, Instant};

use hookwire::pb::interceptor_client::InterceptorClient;
use hookwire_client::Host;

use crate::child::{SERVER_PID, cpu_us};
use crate::measure::Samples;
use crate::report::Headline;
use crate::{Plan, fixtures, started};

/// Emissions per second from `concurrency` sessions against one remote
/// interceptor service, and bare tonic calls per second from as many tasks
/// on one channel, alternating in rounds.
pub struct Throughput {
    ours_rate: f64,
    tonic_rate: f64,
    ours_lat: Samples,
    tonic_lat: Samples,
    /// CPU per call (client µs, server µs), summed over the rounds.
    ours_cpu: (f64, f64),
    tonic_cpu: (f64, f64),
}

impl Throughput {
    pub fn into_headline(self, concurrency: usize) -> Headline {
        Headline::throughput(
            format!("throughput, {concurrency} concurrent sessions vs bare tonic"),
            (self.ours_rate, self.ours_cpu),
            (self.tonic_rate, self.tonic_cpu),
            &self.ours_lat,
            &self.tonic_lat,
            if concurrency == 64 {
                "throughput_vs_tonic"
            } else {
                ""
            },
            (concurrency == 64).then_some((0.8, true)),
        )
    }
}

/// Runs `concurrency` sessions of `host`, then as many bare tonic tasks,
/// alternating in rounds of [`Plan::throughput_window`].
pub async fn throughput(
    host: &Host,
    client: &InterceptorClient<tonic::transport::Channel>,
    request: &hookwire::pb::PreToolCallRequest,
    call: &hookwire_client::ToolCall,
    concurrency: usize,
    plan: Plan,
) -> Throughput {
    let mut sessions = Vec::with_capacity(concurrency);
    for i in 0..concurrency {
        sessions.push(started(host, &format!("s-load-{i}")).await);
    }
    let run_ours = |window: Duration| {
        let tasks: Vec<_> = sessions
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
    let warm = plan.throughput_window / 4;
    run_ours(warm).await;
    run_tonic(warm).await;
    let (mut ours, mut tonic) = (Vec::new(), Vec::new());
    let (mut ours_lat, mut tonic_lat) = (Samples::default(), Samples::default());
    // CPU used by (client, server) and calls made, per side.
    let mut cpu = [(0.0, 0.0, 0usize); 2];
    let server = SERVER_PID.get().copied();
    for r in 0..plan.throughput_rounds {
        for side in if r % 2 == 0 { [0, 1] } else { [1, 0] } {
            let (c0, s0) = (cpu_us(None), cpu_us(server));
            let (rate, lat) = if side == 0 {
                run_ours(plan.throughput_window).await
            } else {
                run_tonic(plan.throughput_window).await
            };
            let acc = &mut cpu[side];
            acc.0 += cpu_us(None) - c0;
            acc.1 += cpu_us(server) - s0;
            acc.2 += lat.len();
            if side == 0 {
                ours.push(rate);
                ours_lat.0.extend(lat);
            } else {
                tonic.push(rate);
                tonic_lat.0.extend(lat);
            }
        }
    }
    let per_call = |(c, s, n): (f64, f64, usize)| (c / n as f64, s / n as f64);
    Throughput {
        ours_rate: Samples(ours).median(),
        tonic_rate: Samples(tonic).median(),
        ours_lat,
        tonic_lat,
        ours_cpu: per_call(cpu[0]),
        tonic_cpu: per_call(cpu[1]),
    }
}

/// Runs the tasks concurrently; returns completions per second and every
/// latency sample.
async fn run_tasks<F>(tasks: Vec<F>) -> (f64, Vec<f64>)
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
