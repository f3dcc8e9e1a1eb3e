//! Tamper detection, chain continuity, concurrency and failure handling of
//! the signing sink and its verifier.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use hookwire::payload_free;
use hookwire::{Composition, InterceptionPoint, InterceptionRecord, Mode, RecordSink, Verdict};
use serde_json::{Value, json};

use crate::*;

const SEED: [u8; 32] = [7; 32];
const OTHER_SEED: [u8; 32] = [9; 32];

fn record(session: &str, sequence: i64) -> InterceptionRecord {
    InterceptionRecord {
        interception_point: InterceptionPoint::PreToolCall,
        mode: Mode::Enforce,
        verdict: payload_free(&Verdict::transform(
            "$target.email",
            json!("secret@example.com"),
        )),
        input_identity: Some("sha256:input".into()),
        enforced_identity: Some("sha256:enforced".into()),
        identity_provider: Some("jcs-sha256".into()),
        session_id: session.into(),
        sequence,
        timestamp: Some("2026-01-01T00:00:00Z".into()),
        trace: None,
        decided_by: Some(0),
        composition: Composition::default(),
        verdicts: Vec::new(),
        fold_truncated: Some(false),
        resolved_by: None,
        interceptors_registered: 1,
        declaration: None,
        extensions: Default::default(),
    }
}

fn inline() -> SinkOptions {
    SinkOptions::default().delivery(Delivery::Inline)
}

/// A log of `n` records of `session` signed with `seed`, closed.
fn write_log(dir: &Path, name: &str, seed: [u8; 32], session: &str, n: i64) -> PathBuf {
    let path = dir.join(name);
    let sink = SigningSink::open(&path, AuditKey::from_seed(seed), inline()).unwrap();
    for i in 1..=n {
        sink.record(&record(session, i));
    }
    assert!(sink.status().is_healthy());
    drop(sink);
    path
}

fn public() -> PublicKey {
    AuditKey::from_seed(SEED).public()
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn rewrite(path: &Path, lines: &[String]) {
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(path, text).unwrap();
}

fn checkpoint(path: &Path) -> Checkpoint {
    Checkpoint::load(checkpoint_path(path), &public()).unwrap()
}

/// The first broken line the verifier reports.
fn broken(path: &Path, checkpoint: Option<&Checkpoint>) -> Broken {
    match verify_log(path, &public(), checkpoint) {
        Err(AuditError::Broken { broken, .. }) => broken,
        other => panic!("expected a broken line, got {other:?}"),
    }
}

#[test]
fn an_intact_log_verifies_and_its_checkpoint_covers_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_log(dir.path(), "log", SEED, "s", 5);
    let cp = checkpoint(&path);
    let v = verify_log(&path, &public(), Some(&cp)).unwrap();
    assert_eq!(v.records, 5);
    assert_eq!(
        cp,
        Checkpoint {
            count: 5,
            head: v.head
        }
    );
    let last = lines(&path).pop().unwrap();
    assert_eq!(v.head, line_hash(last.as_bytes()));
}

#[test]
fn the_line_format_is_seq_prev_record_then_the_signature() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_log(dir.path(), "log", SEED, "s", 2);
    let lines = lines(&path);
    let first = &lines[0];
    let zeros = "0".repeat(64);
    assert!(first.starts_with(&format!("{{\"seq\":1,\"prev\":\"{zeros}\",\"record\":{{")));
    let cut = first.len() - (8 + 128 + 2);
    assert!(first[cut..].starts_with(",\"sig\":\"") && first.ends_with("\"}"));
    let parsed: Value = serde_json::from_str(first).unwrap();
    assert_eq!(parsed["record"], record("s", 1).to_json());
    let second: Value = serde_json::from_str(&lines[1]).unwrap();
    assert_eq!(second["prev"], hex::encode(line_hash(first.as_bytes())));
    // The signature covers the line without its sig member.
    let signed = format!("{}}}", &first[..cut]);
    let mut sig = [0u8; 64];
    hex::decode_to_slice(&first[cut + 8..first.len() - 2], &mut sig).unwrap();
    assert!(public().verifies(signed.as_bytes(), &sig));
}

#[test]
fn records_stay_payload_free() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_log(dir.path(), "log", SEED, "s", 1);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("$target.email"));
    assert!(!text.contains("secret@example.com"));
}

#[test]
fn a_modified_line_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_log(dir.path(), "log", SEED, "s", 5);
    let mut l = lines(&path);
    assert!(l[2].contains("\"decision\":\"transform\""));
    l[2] = l[2].replace("\"decision\":\"transform\"", "\"decision\":\"allow\"");
    rewrite(&path, &l);
    assert_eq!(
        broken(&path, None),
        Broken {
            line: 3,
            problem: Problem::BadSignature
        }
    );
}

#[test]
fn a_deleted_line_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_log(dir.path(), "log", SEED, "s", 5);
    let mut l = lines(&path);
    l.remove(2);
    rewrite(&path, &l);
    assert_eq!(
        broken(&path, None),
        Broken {
            line: 3,
            problem: Problem::OutOfSequence {
                expected: 3,
                found: 4
            }
        }
    );
}

#[test]
fn an_inserted_line_is_named_replayed_or_forged() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_log(dir.path(), "log", SEED, "s", 5);
    let original = lines(&path);

    let mut replayed = original.clone();
    replayed.insert(2, original[1].clone());
    rewrite(&path, &replayed);
    assert_eq!(
        broken(&path, None),
        Broken {
            line: 3,
            problem: Problem::OutOfSequence {
                expected: 3,
                found: 2
            }
        }
    );

    // A line that fits the chain (right seq, right prev) but is signed by
    // someone else's key.
    let forger = AuditKey::from_seed(OTHER_SEED);
    let prev = line_hash(original[1].as_bytes());
    let forged = crate::line::record_line(
        3,
        &prev,
        &record("s", 99).to_json(),
        &serde_json::Map::new(),
        &forger,
    )
    .unwrap();
    let mut inserted = original.clone();
    inserted.insert(2, String::from_utf8(forged).unwrap());
    rewrite(&path, &inserted);
    assert_eq!(
        broken(&path, None),
        Broken {
            line: 3,
            problem: Problem::BadSignature
        }
    );
}

/// Signs `payload` (an object's bytes) as a line the way the sink does.
fn signed_line(payload: &str, key: &AuditKey) -> String {
    let sig = key.sign(payload.as_bytes());
    let open = payload.strip_suffix('}').unwrap();
    format!("{open},\"sig\":\"{}\"}}", hex::encode(sig))
}

#[test]
fn facts_beyond_the_record_go_beside_it_and_format_1_lines_still_verify() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log");
    let sink = SigningSink::open(&path, AuditKey::from_seed(SEED), inline()).unwrap();
    let mut with_facts = record("s", 1);
    with_facts
        .extensions
        .insert("hookwire".into(), json!({"mutation_refused": ["pii"]}));
    sink.record(&with_facts);
    sink.record(&record("s", 2));
    drop(sink);
    let written = lines(&path);
    let first: Value = serde_json::from_str(&written[0]).unwrap();
    // Format 2: `record` is the §10.3 record alone, the facts beside it.
    assert_eq!(first["record"], with_facts.to_json());
    assert!(first["record"].get("extensions").is_none());
    assert_eq!(
        first["extensions"],
        json!({"hookwire": {"mutation_refused": ["pii"]}})
    );
    assert!(written[0].contains("},\"extensions\":{\"hookwire\""));
    let second: Value = serde_json::from_str(&written[1]).unwrap();
    assert!(second.get("extensions").is_none(), "absent without facts");
    assert_eq!(verify_log(&path, &public(), None).unwrap().records, 2);
    assert_eq!(crate::LINE_FORMAT, 2);

    // A format 1 line (the facts inside `record`, no `extensions` member)
    // verifies; a member the format does not have does not.
    let key = AuditKey::from_seed(SEED);
    let zeros = "0".repeat(64);
    let mut old = record("s", 1).to_json();
    old["extensions"] = json!({"hookwire": {"cancelled": true}});
    let v1 = signed_line(
        &format!("{{\"seq\":1,\"prev\":\"{zeros}\",\"record\":{old}}}"),
        &key,
    );
    let v1_path = dir.path().join("v1");
    rewrite(&v1_path, &[v1]);
    assert_eq!(verify_log(&v1_path, &public(), None).unwrap().records, 1);
    let bare = record("s", 1).to_json();
    for (extra, problem) in [
        (",\"extensions\":[]", "extensions is not an object"),
        (",\"facts\":{}", "members are not exactly"),
    ] {
        let bad = signed_line(
            &format!("{{\"seq\":1,\"prev\":\"{zeros}\",\"record\":{bare}{extra}}}"),
            &key,
        );
        rewrite(&v1_path, &[bad]);
        match broken(&v1_path, None).problem {
            Problem::Malformed(detail) => assert!(detail.contains(problem), "{detail}"),
            other => panic!("{extra}: {other:?}"),
        }
    }
}

#[test]
fn reordered_lines_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_log(dir.path(), "log", SEED, "s", 5);
    let mut l = lines(&path);
    l.swap(1, 2);
    rewrite(&path, &l);
    assert_eq!(
        broken(&path, None),
        Broken {
            line: 2,
            problem: Problem::OutOfSequence {
                expected: 2,
                found: 3
            }
        }
    );
}

#[test]
fn a_bad_signature_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_log(dir.path(), "log", SEED, "s", 5);
    let mut l = lines(&path);
    let line = &mut l[3];
    let at = line.len() - 3;
    let flipped = if &line[at..=at] == "0" { "1" } else { "0" };
    line.replace_range(at..=at, flipped);
    rewrite(&path, &l);
    assert_eq!(
        broken(&path, None),
        Broken {
            line: 4,
            problem: Problem::BadSignature
        }
    );
}

#[test]
fn another_key_verifies_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_log(dir.path(), "log", SEED, "s", 3);
    let other = AuditKey::from_seed(OTHER_SEED).public();
    match verify_log(&path, &other, None) {
        Err(AuditError::Broken { broken, .. }) => assert_eq!(
            broken,
            Broken {
                line: 1,
                problem: Problem::BadSignature
            }
        ),
        other => panic!("expected line 1 to fail, got {other:?}"),
    }
    assert!(matches!(
        Checkpoint::load(checkpoint_path(&path), &other),
        Err(AuditError::Checkpoint { .. })
    ));
}

#[test]
fn lines_from_another_log_of_the_same_key_break_the_link() {
    let dir = tempfile::tempdir().unwrap();
    let a = write_log(dir.path(), "a", SEED, "session-a", 3);
    let b = write_log(dir.path(), "b", SEED, "session-b", 3);
    let mut l = lines(&a);
    l[1] = lines(&b)[1].clone();
    rewrite(&a, &l);
    assert_eq!(
        broken(&a, None),
        Broken {
            line: 2,
            problem: Problem::BrokenLink
        }
    );
}

#[test]
fn a_truncated_tail_is_caught_by_the_checkpoint_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_log(dir.path(), "log", SEED, "s", 5);
    let cp = checkpoint(&path);
    let mut l = lines(&path);
    l.truncate(3);
    rewrite(&path, &l);
    // Without a checkpoint a shorter log is a valid log.
    assert_eq!(verify_log(&path, &public(), None).unwrap().records, 3);
    assert_eq!(
        broken(&path, Some(&cp)),
        Broken {
            line: 4,
            problem: Problem::Truncated {
                expected: 5,
                found: 3
            }
        }
    );
    // Cut in the middle of a line: the torn line is named.
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, &text[..text.len() - 40]).unwrap();
    assert_eq!(
        broken(&path, None),
        Broken {
            line: 3,
            problem: Problem::Incomplete
        }
    );
}

#[test]
fn a_log_replaced_by_another_of_the_same_length_is_caught_by_the_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_log(dir.path(), "log", SEED, "s", 4);
    let cp = checkpoint(&path);
    let other = write_log(dir.path(), "other", SEED, "t", 4);
    std::fs::copy(&other, &path).unwrap();
    assert_eq!(
        broken(&path, Some(&cp)),
        Broken {
            line: 4,
            problem: Problem::CheckpointMismatch
        }
    );
}

#[test]
fn reopening_continues_the_chain_and_refuses_a_broken_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_log(dir.path(), "log", SEED, "s", 3);
    let sink = SigningSink::open(&path, AuditKey::from_seed(SEED), inline()).unwrap();
    assert_eq!(sink.status().lines, 3);
    sink.record(&record("s", 4));
    drop(sink);
    let cp = checkpoint(&path);
    assert_eq!(cp.count, 4);
    assert_eq!(verify_log(&path, &public(), Some(&cp)).unwrap().records, 4);

    // Cut off the tail: the checkpoint next to the log refuses the reopen.
    let mut l = lines(&path);
    l.truncate(2);
    rewrite(&path, &l);
    let refused = SigningSink::open(&path, AuditKey::from_seed(SEED), inline());
    assert!(
        matches!(&refused, Err(AuditError::Broken { broken, .. }) if broken.line == 3),
        "{refused:?}"
    );
    // Another key's sink cannot take over the log.
    let taken = SigningSink::open(&path, AuditKey::from_seed(OTHER_SEED), inline());
    assert!(
        matches!(taken, Err(AuditError::Checkpoint { .. })),
        "{taken:?}"
    );
}

fn concurrent(options: SinkOptions) {
    const TASKS: i64 = 32;
    const EACH: i64 = 10;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log");
    let sink = SigningSink::open(&path, AuditKey::from_seed(SEED), options).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .build()
        .unwrap();
    runtime.block_on(async {
        let sink = Arc::new(sink.clone());
        let tasks: Vec<_> = (0..TASKS)
            .map(|t| {
                let sink = sink.clone();
                tokio::spawn(async move {
                    for i in 1..=EACH {
                        sink.record(&record(&format!("s-{t}"), i));
                        tokio::task::yield_now().await;
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    });
    let status = sink.sync().unwrap();
    assert_eq!(status.lines, (TASKS * EACH) as u64);
    assert!(status.is_healthy());
    let cp = checkpoint(&path);
    let v = verify_log(&path, &public(), Some(&cp)).unwrap();
    assert_eq!(v.records, (TASKS * EACH) as u64);
    let seen: HashSet<(String, i64)> = lines(&path)
        .iter()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let r = &v["record"];
            (
                r["session_id"].as_str().unwrap().to_owned(),
                r["sequence"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(seen.len(), (TASKS * EACH) as usize);
}

#[test]
fn concurrent_emissions_keep_the_chain_valid_in_the_background() {
    concurrent(SinkOptions::default());
}

#[test]
fn concurrent_emissions_keep_the_chain_valid_inline() {
    concurrent(inline().fsync(Fsync::Never));
}

#[test]
fn every_fsync_policy_leaves_a_checkpoint_that_covers_what_was_synced() {
    for fsync in [
        Fsync::EveryRecord,
        Fsync::Every(std::num::NonZeroU32::new(2).unwrap()),
        Fsync::Never,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let sink =
            SigningSink::open(&path, AuditKey::from_seed(SEED), inline().fsync(fsync)).unwrap();
        for i in 1..=3 {
            sink.record(&record("s", i));
        }
        let on_disk = std::fs::read(checkpoint_path(&path)).ok();
        let covered = on_disk.map(|_| checkpoint(&path).count);
        let expected = match fsync {
            Fsync::EveryRecord => Some(3),
            Fsync::Every(_) => Some(2),
            Fsync::Never => None,
        };
        assert_eq!(covered, expected, "{fsync:?}");
        sink.sync().unwrap();
        assert_eq!(checkpoint(&path).count, 3, "{fsync:?}");
    }
}

#[test]
fn a_write_failure_stops_the_sink_and_is_reported() {
    let sink = SigningSink::open(
        "/dev/full",
        AuditKey::from_seed(SEED),
        inline().checkpoint(false),
    )
    .unwrap();
    for i in 1..=3 {
        sink.record(&record("s", i));
    }
    let status = sink.status();
    assert_eq!((status.lines, status.dropped), (0, 3));
    assert!(!status.is_healthy());
    assert!(status.error.unwrap().contains("line 1"));
    assert!(matches!(sink.sync(), Err(AuditError::Stopped(_))));

    let background = SigningSink::open(
        "/dev/full",
        AuditKey::from_seed(SEED),
        SinkOptions::default().checkpoint(false),
    )
    .unwrap();
    background.record(&record("s", 1));
    assert!(background.sync().is_err());
    assert_eq!(background.status().dropped, 1);
}

#[test]
fn key_files_are_private_labelled_and_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.key");
    let key = AuditKey::generate_to(&path).unwrap();
    let pub_path = public_key_path(&path);
    assert_eq!(pub_path, dir.path().join("audit.key.pub"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(
            AuditKey::load(&path),
            Err(AuditError::KeyPermissions { .. })
        ));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let loaded = AuditKey::load(&path).unwrap();
    assert_eq!(loaded.public(), key.public());
    assert_eq!(PublicKey::load(&pub_path).unwrap(), key.public());
    // The labels keep the two files apart.
    let wrong = PublicKey::load(&path).unwrap_err().to_string();
    assert!(wrong.contains("signing key file"), "{wrong}");
    assert!(AuditKey::load(&pub_path).is_err());
    // No overwriting, and no key material in Debug.
    assert!(AuditKey::generate_to(&path).is_err());
    let secret = std::fs::read_to_string(&path).unwrap();
    let seed_hex = secret.split_whitespace().nth(1).unwrap();
    assert!(!format!("{key:?}").contains(seed_hex));
}
