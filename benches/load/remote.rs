//! The `remote` and `deadline` sections: one remote emission (client and
//! interceptor service in separate processes) against a bare tonic unary
//! call carrying the same request bytes, with and without a per-call
//! deadline; the same emission over the `Multiplex` stream, over TCP and
//! over an owner-only Unix socket; and a raw TCP round trip of the same
//! bytes, the physical floor. The setup is shared
//! with later sections (throughput, spawn, growth), which measure against
//! the same sessions and floor.

use hookwire::Profile;
use hookwire::pb::interceptor_client::InterceptorClient;
use hookwire_client::{Host, ToolCall};
use serde_json::Value;
use tonic::transport::Channel;

use crate::child::Endpoints;
use crate::measure::{self, Emit, FloorCall, TcpRoundTrip, interleaved};
use crate::report::Headline;
use crate::{Plan, REMOTE_TIMEOUT, fixtures, started};

/// Hosts with one remote allow interceptor (called unary, and over the
/// stream), a started session on each, the bare tonic call on the floor
/// service and the raw TCP round trip.
pub struct RemoteSetup {
    /// The host bound to the allow service that declares no stream: it
    /// calls unary.
    pub host: Host,
    /// A `pre_tool_call` emission on a started session of `host`.
    pub ours: Emit,
    /// The host bound to the allow service that declares the stream.
    pub stream_host: Host,
    /// A `pre_tool_call` emission on a started session of `stream_host`.
    pub stream: Emit,
    /// The host bound to the allow service on a Unix socket (the
    /// stream), and an emission on a started session of it; `None`
    /// against a server started by hand.
    pub uds: Option<(Host, Emit)>,
    /// The raw TCP round trip with the request's bytes.
    pub tcp: TcpRoundTrip,
    /// The same request bytes as a bare tonic call, without a deadline.
    pub floor: FloorCall,
    /// The channel to the floor service, for later sections' own calls.
    pub floor_channel: Channel,
}

impl RemoteSetup {
    /// Connects to the child's allow, unary, floor and TCP services.
    pub async fn new(ep: &Endpoints, call: &ToolCall, args: &Value) -> Self {
        let host =
            fixtures::remote_host(&ep.unary, 1, Profile::SequentialFirstDeny, REMOTE_TIMEOUT);
        let ours = Emit {
            session: started(&host, "s-remote").await,
            call: call.clone(),
        };
        let stream_host =
            fixtures::remote_host(&ep.allow, 1, Profile::SequentialFirstDeny, REMOTE_TIMEOUT);
        let stream = Emit {
            session: started(&stream_host, "s-stream").await,
            call: call.clone(),
        };
        let uds = match &ep.uds {
            Some(socket) => {
                let host =
                    fixtures::remote_host(socket, 1, Profile::SequentialFirstDeny, REMOTE_TIMEOUT);
                let emit = Emit {
                    session: started(&host, "s-uds").await,
                    call: call.clone(),
                };
                Some((host, emit))
            }
            None => None,
        };
        let tcp = TcpRoundTrip::connect(&ep.tcp, fixtures::request_len(args)).await;
        let floor_channel = measure::channel(&ep.floor).await;
        let floor = FloorCall {
            client: InterceptorClient::new(floor_channel.clone())
                .max_decoding_message_size(16 * 1024 * 1024),
            request: fixtures::floor_request(args),
            deadline: None,
        };
        Self {
            host,
            ours,
            stream_host,
            stream,
            uds,
            tcp,
            floor,
            floor_channel,
        }
    }

    /// `deadline`: what a per-call deadline costs the bare transport, and
    /// the remote emission against the floor with the same deadline.
    pub async fn deadline(&mut self, plan: Plan, headline: &mut Vec<Headline>) {
        let mut bounded = FloorCall {
            client: self.floor.client.clone(),
            request: self.floor.request.clone(),
            deadline: Some(REMOTE_TIMEOUT),
        };
        let (a, b) = interleaved(
            &mut bounded,
            &mut self.floor,
            300,
            plan.rounds,
            plan.remote_per_round,
        )
        .await;
        headline.push(Headline::latency(
            "bare tonic with a per-call deadline vs without".to_owned(),
            &a,
            &b,
            "",
            None,
        ));
        let (a, b) = interleaved(
            &mut self.ours,
            &mut bounded,
            300,
            plan.rounds,
            plan.remote_per_round,
        )
        .await;
        headline.push(Headline::latency(
            "remote emission vs bare tonic with the same deadline".to_owned(),
            &a,
            &b,
            "",
            None,
        ));
    }

    /// `remote`: the remote emission against the bare tonic unary call of
    /// `request_bytes`. Returns the emission's median, in µs.
    pub async fn versus_floor(
        &mut self,
        plan: Plan,
        request_bytes: usize,
        headline: &mut Vec<Headline>,
    ) -> f64 {
        let (a, b) = interleaved(
            &mut self.ours,
            &mut self.floor,
            300,
            plan.rounds,
            plan.remote_per_round,
        )
        .await;
        headline.push(Headline::latency(
            format!(
                "remote emission, unary, vs bare tonic unary ({request_bytes} B request, 2 processes)"
            ),
            &a,
            &b,
            "remote_vs_tonic",
            Some((1.15, false)),
        ));
        let median = a.median();
        let (a, b) = interleaved(
            &mut self.stream,
            &mut self.floor,
            300,
            plan.rounds,
            plan.remote_per_round,
        )
        .await;
        headline.push(Headline::latency(
            "remote emission over the Multiplex stream vs bare tonic unary".to_owned(),
            &a,
            &b,
            "stream_vs_tonic",
            Some((0.8, false)),
        ));
        let (a, b) = interleaved(
            &mut self.stream,
            &mut self.ours,
            300,
            plan.rounds,
            plan.remote_per_round,
        )
        .await;
        headline.push(Headline::latency(
            "remote emission: Multiplex stream vs unary".to_owned(),
            &a,
            &b,
            "",
            None,
        ));
        if let Some((_, uds)) = &mut self.uds {
            let (a, b) = interleaved(
                uds,
                &mut self.floor,
                300,
                plan.rounds,
                plan.remote_per_round,
            )
            .await;
            headline.push(Headline::latency(
                "remote emission over the Multiplex stream on a Unix socket vs bare tonic unary (TCP)"
                    .to_owned(),
                &a,
                &b,
                "uds_stream_vs_tonic",
                Some((0.6, false)),
            ));
            let (a, b) = interleaved(
                uds,
                &mut self.stream,
                300,
                plan.rounds,
                plan.remote_per_round,
            )
            .await;
            headline.push(Headline::latency(
                "remote emission over the Multiplex stream: Unix socket vs TCP".to_owned(),
                &a,
                &b,
                "",
                None,
            ));
        }
        let (a, b) = interleaved(
            &mut self.tcp,
            &mut self.floor,
            300,
            plan.rounds,
            plan.remote_per_round,
        )
        .await;
        headline.push(Headline::latency(
            format!("raw TCP round trip ({request_bytes} B out, 8 B back) vs bare tonic unary"),
            &a,
            &b,
            "",
            None,
        ));
        median
    }
}
