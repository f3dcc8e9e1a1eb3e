//! A reloaded access list revoking tokens, page sessions and open streams.

use super::*;

/// The `name=value` of the session cookie a successful sign-in sets.
async fn sign_in(web: std::net::SocketAddr, token: &str) -> Result<String, u16> {
    let (status, head, _) = http(
        web,
        "POST",
        "/api/login",
        &[],
        Some(json!({"token": token})),
    )
    .await;
    if status != 200 {
        return Err(status);
    }
    let line = head
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("set-cookie:"))
        .expect("a session cookie");
    Ok(line
        .split_once(':')
        .unwrap()
        .1
        .trim()
        .split(';')
        .next()
        .unwrap()
        .to_owned())
}

#[tokio::test]
async fn a_reloaded_access_list_revokes_tokens_sessions_and_open_streams() {
    let access = approval_common::access();
    let service =
        hookwire_approvals::ApprovalServer::with_queue(ApprovalQueue::new(), access.clone())
            .heartbeat_interval(Duration::from_millis(100))
            .spawn_local()
            .await
            .expect("approval service");
    let web = service.web_addr().expect("page");
    let ann = sign_in(web, token_of("ann")).await.expect("ann signs in");
    let (status, _, _) = http(web, "GET", "/api/pending", &[("cookie", &ann)], None).await;
    assert_eq!(status, 200);
    let mut client = ApprovalServiceClient::connect(service.endpoint())
        .await
        .unwrap();
    let (_up, rx) = mpsc::channel::<pb::ApproverMessage>(1);
    let mut watching = client
        .watch(bearer(ReceiverStream::new(rx), token_of("ann")))
        .await
        .expect("ann watches")
        .into_inner();
    assert!(watching.message().await.unwrap().is_some());
    // A host waits on a request.
    let resolver = StreamResolver::builder(service.endpoint())
        .bearer_token(HOST_TOKEN)
        .deadline(Duration::from_secs(60))
        .build()
        .expect("resolver");
    let asking = tokio::spawn({
        let resolver = resolver.clone();
        async move {
            resolver
                .resolve(&request("wire_transfer", "big_transfer"))
                .await
        }
    });
    let until = Instant::now() + Duration::from_secs(10);
    while service.queue().is_empty() {
        assert!(Instant::now() < until, "the request arrives");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let generation = access.generation();

    // An invalid list changes nothing.
    let mut broken = approval_common::access_config();
    broken.revoked_token_sha256.push("not a hash".into());
    assert!(access.reload(&broken).is_err());
    assert_eq!(access.generation(), generation);
    let (status, _, _) = http(web, "GET", "/api/pending", &[("cookie", &ann)], None).await;
    assert_eq!(status, 200, "the list in force stays");

    // Ann's token and the host's revoked: her page session, her open
    // Watch stream and every new call of hers are refused; the host's
    // stream ends and its request is withdrawn (failed closed on the
    // host); bob is untouched.
    access
        .reload(
            &approval_common::access_config()
                .revoke(token_of("ann"))
                .revoke(HOST_TOKEN),
        )
        .expect("a valid list");
    let (status, _, _) = http(web, "GET", "/api/pending", &[("cookie", &ann)], None).await;
    assert_eq!(status, 401, "her session ended");
    assert_eq!(sign_in(web, token_of("ann")).await, Err(401));
    let bob = sign_in(web, token_of("bob")).await.expect("bob signs in");
    let (status, _, _) = http(web, "GET", "/api/pending", &[("cookie", &bob)], None).await;
    assert_eq!(status, 200);
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match watching.message().await {
                Ok(Some(_)) => {}
                Ok(None) => return Code::Ok,
                Err(status) => return status.code(),
            }
        }
    })
    .await
    .expect("her open stream ended within a heartbeat");
    assert_eq!(ended, Code::Unauthenticated);
    let refused = client
        .decide(bearer(
            pb::DecideRequest {
                approver: String::new(),
                resolution: None,
            },
            token_of("ann"),
        ))
        .await
        .expect_err("refused");
    assert_eq!(refused.code(), Code::Unauthenticated);
    let failed = tokio::time::timeout(Duration::from_secs(5), asking)
        .await
        .expect("the host's request ended")
        .expect("the asking task");
    assert!(failed.is_err(), "{failed:?}");
    assert!(service.queue().is_empty(), "withdrawn");
    service.shutdown().await.unwrap();
}
