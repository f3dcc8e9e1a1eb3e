//! A misbehaving approval service for the host's failure tests: it says
//! it is ready like a real one, then either never says anything again
//! ([`RogueApprovals::mute`]) or answers every request with an oversized
//! resolution ([`RogueApprovals::oversized`]). `Watch` and `Decide` are
//! unimplemented.

use std::pin::Pin;

use futures::Stream;
use hookwire::pb;
use hookwire::pb::approval_service_server::{ApprovalService, ApprovalServiceServer};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

/// How the rogue service answers a host's requests.
#[derive(Clone, Copy, Debug)]
enum Answer {
    /// Reads and drops them; the stream stays open.
    Nothing,
    /// One resolution whose approver name is this many bytes.
    Oversized(usize),
}

/// An `ApprovalService` that misbehaves after its `Ready` message.
#[derive(Clone, Debug)]
pub struct RogueApprovals {
    name: &'static str,
    heartbeat_interval_ms: u64,
    answer: Answer,
}

impl RogueApprovals {
    /// Announces `heartbeat_interval_ms`, then is silent forever (no
    /// heartbeat, no resolution).
    pub fn mute(heartbeat_interval_ms: u64) -> Self {
        Self {
            name: "mute",
            heartbeat_interval_ms,
            answer: Answer::Nothing,
        }
    }

    /// Answers every request with a resolution of about `bytes` bytes.
    pub fn oversized(bytes: usize) -> Self {
        Self {
            name: "rogue",
            heartbeat_interval_ms: 1000,
            answer: Answer::Oversized(bytes),
        }
    }

    /// Serves it on a free port of 127.0.0.1 until the handle is dropped.
    pub async fn spawn(self) -> RunningRogue {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("the bound address");
        let task = tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(ApprovalServiceServer::new(self))
                .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
        );
        RunningRogue {
            endpoint: format!("http://{addr}"),
            task,
        }
    }
}

/// A rogue service serving in the background; dropping it stops it.
pub struct RunningRogue {
    endpoint: String,
    task: JoinHandle<Result<(), tonic::transport::Error>>,
}

impl RunningRogue {
    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }
}

impl Drop for RunningRogue {
    fn drop(&mut self) {
        self.task.abort();
    }
}

type Messages<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

#[tonic::async_trait]
impl ApprovalService for RogueApprovals {
    type ResolveStream = Messages<pb::ServiceMessage>;
    type WatchStream = Messages<pb::WatchEvent>;

    async fn resolve(
        &self,
        request: Request<Streaming<pb::HostMessage>>,
    ) -> Result<Response<Self::ResolveStream>, Status> {
        let mut inbound = request.into_inner();
        let ready = pb::ServiceMessage {
            kind: Some(pb::service_message::Kind::Ready(pb::ServiceReady {
                service: self.name.into(),
                heartbeat_interval_ms: self.heartbeat_interval_ms,
            })),
        };
        let answer = self.answer;
        let (tx, rx) = mpsc::channel(2);
        tokio::spawn(async move {
            let _ = tx.send(Ok(ready)).await;
            while let Ok(Some(m)) = inbound.message().await {
                let (Answer::Oversized(size), Some(pb::host_message::Kind::Request(r))) =
                    (answer, m.kind)
                else {
                    continue;
                };
                let huge = pb::ServiceMessage {
                    kind: Some(pb::service_message::Kind::Resolution(
                        pb::ApprovalResolution {
                            request_id: r.request_id,
                            approver: "x".repeat(size),
                            ..Default::default()
                        },
                    )),
                };
                let _ = tx.send(Ok(huge)).await;
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn watch(
        &self,
        _: Request<Streaming<pb::ApproverMessage>>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        Err(Status::unimplemented(self.name))
    }

    async fn decide(
        &self,
        _: Request<pb::DecideRequest>,
    ) -> Result<Response<pb::DecideResponse>, Status> {
        Err(Status::unimplemented(self.name))
    }
}
