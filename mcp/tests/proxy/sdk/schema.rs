//! The mediation table against the official schema: every method and
//! member the Python SDK's schema types (`mcp_types.methods`, pinned in
//! the suite) define for the revisions the proxy mediates, in both
//! directions, must be classified by `hookwire_mcp::mediation::TABLE`: a
//! revision that adds one fails here until the table says what the proxy
//! does with it.

use hookwire_mcp::mediation::{self, Direction, Kind, PROTOCOL_VERSIONS};
use serde_json::Value;

use super::{MCP_SDK, fixtures};
use hookwire_testkit::python_venv;

#[test]
fn the_mediation_table_classifies_every_method_and_member_of_the_official_schema() {
    let out = std::process::Command::new(python_venv(MCP_SDK))
        .arg(fixtures().join("schema_walk.py"))
        .arg(PROTOCOL_VERSIONS.join(","))
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let walked: Vec<Value> = serde_json::from_slice(&out.stdout).expect("a JSON list");
    assert!(walked.len() > 20, "the walk found too little: {walked:?}");
    let mut unclassified = Vec::new();
    let mut members = 0;
    for m in &walked {
        let direction = match m["direction"].as_str() {
            Some("to_server") => Direction::ToServer,
            _ => Direction::ToClient,
        };
        let kind = match m["kind"].as_str() {
            Some("request") => Kind::Request,
            _ => Kind::Notification,
        };
        let method = m["method"].as_str().unwrap();
        if mediation::row(direction, kind, method, "").is_none() {
            unclassified.push(format!("{} {} {method}", direction.as_str(), kind.as_str()));
        }
        for member in m["members"].as_array().unwrap() {
            members += 1;
            let member = member.as_str().unwrap();
            if mediation::row(direction, kind, method, member).is_none() {
                unclassified.push(format!(
                    "{} {} {method} {member}",
                    direction.as_str(),
                    kind.as_str()
                ));
            }
        }
    }
    assert!(
        unclassified.is_empty(),
        "the mediation table does not classify:\n{}",
        unclassified.join("\n")
    );
    assert!(members > 100, "{members} members walked");
}
