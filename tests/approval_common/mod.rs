//! Shared by the approval tests: the access list of every test approval
//! service (one host, a few approvers, one of them limited by rules) and
//! the tokens its principals present. Only the hashes reach the service.

#![allow(dead_code)]

use hookwire_approvals::{
    Access, AccessConfig, ApprovalServer, ApproverConfig, ApproverRules, PrincipalConfig,
};

/// The test host's token (its name on approvers' screens: `test-host`).
pub const HOST_TOKEN: &str = "hwa_test_host_0123456789abcdef0123456789abcdef";

/// A second host's token (its name: `billing`).
pub const BILLING_HOST_TOKEN: &str = "hwa_test_billing_0123456789abcdef0123456789ab";

/// The approvers and their tokens. `payments` may only decide
/// `wire_transfer` calls whose deny reason starts with `payments.`.
pub const APPROVERS: [(&str, &str); 5] = [
    ("ann", "hwa_test_ann_0123456789abcdef0123456789abcdef"),
    ("bob", "hwa_test_bob_0123456789abcdef0123456789abcdef"),
    ("mallory", "hwa_test_mallory_0123456789abcdef0123456789ab"),
    ("web", "hwa_test_web_0123456789abcdef0123456789abcdef"),
    ("payments", "hwa_test_payments_0123456789abcdef0123456789"),
];

/// The token of approver `name`.
pub fn token_of(name: &str) -> &'static str {
    APPROVERS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
        .unwrap_or_else(|| panic!("no test approver named {name}"))
}

/// The access configuration of every test service.
pub fn access_config() -> AccessConfig {
    let mut config = AccessConfig::default()
        .host(PrincipalConfig::token("test-host", HOST_TOKEN))
        .host(PrincipalConfig::token("billing", BILLING_HOST_TOKEN));
    for (name, token) in APPROVERS {
        let mut approver = ApproverConfig::token(name, token);
        if name == "payments" {
            approver = approver.rules(ApproverRules {
                tools: vec!["wire_transfer".into()],
                reason_prefixes: vec!["payments.".into()],
                ..ApproverRules::default()
            });
        }
        config = config.approver(approver);
    }
    config
}

/// [`access_config`], checked.
pub fn access() -> Access {
    Access::new(&access_config()).expect("test access list")
}

/// An approval service for the test principals.
pub fn server() -> ApprovalServer {
    ApprovalServer::new(access())
}

/// `request` carrying `token` as its bearer credential.
pub fn bearer<T>(request: T, token: &str) -> tonic::Request<T> {
    let mut request = tonic::Request::new(request);
    request.metadata_mut().insert(
        "authorization",
        format!("Bearer {token}").parse().expect("header value"),
    );
    request
}
