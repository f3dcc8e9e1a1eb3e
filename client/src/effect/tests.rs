//! The effect table, case by case: what a response asks for, the grant,
//! the release rule, and the whole table — mode × profile × the binding's
//! own verdict × granted or not — driven through the pure composer.

use hookwire::approval::Resolved;
use hookwire::{
    AgentContext, Composition, HostError, InterceptionPoint, Mode, OnApproval, Profile, Synthesis,
    Verdict,
};
use serde_json::{Map, Value, json};

use super::{Answers, Effect, Effects, Fate, asked, fate, outside_grant};
use crate::compose::{Composer, Plan, Step};

fn ext(ours: Value) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("hookwire".into(), ours);
    m
}

#[test]
fn each_effect_member_asks_for_its_kind_and_nothing_else_does() {
    let cases = [
        (
            json!({"route": {"executor": "sandbox"}}),
            vec![Effect::Route],
        ),
        (
            json!({"model": {"temperature": 0.2}}),
            vec![Effect::ModelParams],
        ),
        (
            json!({"upstream": {"before_credentials": {"set_headers": {"x": "1"}}}}),
            vec![Effect::Headers],
        ),
        (
            json!({"upstream": {"after_credentials": {"clear_headers": ["x"]}}}),
            vec![Effect::Headers],
        ),
        (
            json!({"upstream": {"before_credentials": {"credential": "team-b"}}}),
            vec![Effect::Credential],
        ),
        (
            json!({"upstream": {"after_credentials": {"body": {"model": "m"}}}}),
            vec![Effect::UpstreamBody],
        ),
        (
            json!({"route": {}, "model": {}, "upstream": {"before_credentials": {
                "set_headers": {}, "credential": "k", "body": {}}}}),
            Effect::ALL.to_vec(),
        ),
        // Inert: members no consumer acts on, shapes no consumer reads.
        (json!({"note": "informational"}), vec![]),
        (json!({"upstream": "not an object"}), vec![]),
        (json!({"upstream": {"before_credentials": ["x"]}}), vec![]),
        (json!("not an object"), vec![]),
    ];
    for (ours, kinds) in cases {
        assert_eq!(asked(&ext(ours.clone())), Effects::of(kinds), "{ours}");
    }
    // Another namespace asks for nothing, whatever it holds.
    let mut other = Map::new();
    other.insert("acme".into(), json!({"route": {"executor": "x"}}));
    assert!(asked(&other).is_empty());
}

#[test]
fn a_grant_holds_exactly_its_kinds_and_no_grant_holds_every_kind() {
    let all = Effects::of(Effect::ALL);
    assert_eq!(outside_grant(None, all), Effects::NONE);
    assert_eq!(outside_grant(Some(Effects::NONE), all), all);
    let route = Effects::of([Effect::Route]);
    assert_eq!(outside_grant(Some(route), route), Effects::NONE);
    assert_eq!(
        outside_grant(Some(route), Effects::of([Effect::Route, Effect::Headers])),
        Effects::of([Effect::Headers])
    );
    assert_eq!(
        outside_grant(Some(Effects::NONE), Effects::NONE),
        Effects::NONE
    );
    assert_eq!(
        Effects::of([Effect::Headers, Effect::Route]).describe(),
        "route, headers"
    );
    assert_eq!(Effects::NONE.describe(), "none");
    for kind in Effect::ALL {
        assert_eq!(Effect::parse(kind.as_str()), Some(kind));
    }
    assert_eq!(Effect::parse("everything"), None);
}

#[test]
fn only_enforcement_a_permitting_own_verdict_and_a_proceeding_action_release() {
    use Mode::{Enforce, EvaluateOnly};
    let table = [
        (Enforce, true, true, Fate::Released),
        (Enforce, true, false, Fate::Blocked),
        (Enforce, false, true, Fate::NotPermitted),
        (Enforce, false, false, Fate::NotPermitted),
        (EvaluateOnly, true, true, Fate::EvaluateOnly),
        (EvaluateOnly, true, false, Fate::EvaluateOnly),
        (EvaluateOnly, false, true, Fate::EvaluateOnly),
        (EvaluateOnly, false, false, Fate::EvaluateOnly),
    ];
    for (mode, own, combined, expected) in table {
        assert_eq!(
            fate(mode, own, combined),
            expected,
            "{mode:?} {own} {combined}"
        );
    }
}

#[test]
fn settling_releases_what_may_act_and_records_every_ask() {
    let route = ext(json!({"route": {"executor": "sandbox"}}));
    let inert = ext(json!({"note": "x"}));
    let mut answers = Answers::default();
    answers.answered("router", true, asked(&route), Effects::NONE, route.clone());
    answers.answered("notes", true, Effects::NONE, Effects::NONE, inert.clone());
    answers.answered("denier", false, asked(&route), Effects::NONE, route.clone());
    answers.answered(
        "rogue",
        false,
        Effects::NONE,
        Effects::of([Effect::Credential]),
        Map::new(),
    );
    let settled = answers.settle(Mode::Enforce, true);
    assert_eq!(
        settled.released,
        [
            ("router".to_owned(), route.clone()),
            ("notes".to_owned(), inert)
        ]
    );
    assert_eq!(
        Value::Object(settled.facts),
        json!({
            "router": {"kinds": ["route"], "fate": "released"},
            "denier": {"kinds": ["route"], "fate": "not_permitted"},
            "rogue": {"kinds": ["credential"], "fate": "refused"},
        })
    );

    let mut shadow = Answers::default();
    shadow.answered("router", true, asked(&route), Effects::NONE, route);
    let settled = shadow.settle(Mode::EvaluateOnly, true);
    assert!(settled.released.is_empty());
    assert_eq!(
        Value::Object(settled.facts),
        json!({"router": {"kinds": ["route"], "fate": "evaluate_only"}})
    );
    assert!(
        Answers::default()
            .settle(Mode::Enforce, true)
            .facts
            .is_empty()
    );
}

// ---------------------------------------------------------------------------
// The whole table through composition.

/// The subject binding's own verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Own {
    Allow,
    Transform,
    Warn,
    Deny,
    /// A liftable deny the approval seam lifts.
    Escalate,
}

impl Own {
    const ALL: [Self; 5] = [
        Self::Allow,
        Self::Transform,
        Self::Warn,
        Self::Deny,
        Self::Escalate,
    ];

    fn verdict(self) -> Verdict {
        match self {
            Self::Allow => Verdict::allow(),
            Self::Transform => Verdict::transform("$target.n", json!(2)),
            Self::Warn => Verdict::warn("policy:note", "noted"),
            Self::Deny => Verdict::deny("policy:no"),
            Self::Escalate => Verdict::escalate("policy:ask"),
        }
    }
}

fn compositions() -> [(&'static str, Composition); 7] {
    let with = |p, f: fn(&mut Composition)| {
        let mut c = Composition::new(p);
        f(&mut c);
        c
    };
    [
        (
            "first_deny/stop",
            with(Profile::SequentialFirstDeny, |c| {
                c.on_approval = Some(OnApproval::Stop)
            }),
        ),
        (
            "first_deny/resume",
            with(Profile::SequentialFirstDeny, |c| {
                c.on_approval = Some(OnApproval::Resume)
            }),
        ),
        ("run_all", Composition::new(Profile::SequentialRunAll)),
        (
            "strictest/deny",
            with(Profile::ParallelStrictest, |c| {
                c.on_transform_conflict = Some(Synthesis::Deny);
            }),
        ),
        (
            "strictest/approval",
            with(Profile::ParallelStrictest, |c| {
                c.on_transform_conflict = Some(Synthesis::Approval);
            }),
        ),
        (
            "unanimous/deny",
            with(Profile::ParallelUnanimous, |c| {
                c.on_disagreement = Some(Synthesis::Deny)
            }),
        ),
        (
            "unanimous/approval",
            with(Profile::ParallelUnanimous, |c| {
                c.on_disagreement = Some(Synthesis::Approval);
            }),
        ),
    ]
}

fn ctx() -> AgentContext {
    AgentContext::from_json(json!({
        "spec": "agent-hooks/0.1", "interception_point": "pre_tool_call",
        "timestamp": "2026-01-01T00:00:00Z", "sequence": 1,
        "agent": {"id": "a", "framework": "hookwire"}, "session": {"id": "s"},
        "tool_call": {"id": "c1", "name": "bash", "args": {"n": 1}},
    }))
    .unwrap()
}

/// Composes `[subject, allow]` under `composition` and `mode` with a
/// resolver that approves every consultation with `allow`, the subject's
/// answer refused first when it asks outside its grant (as dispatch does),
/// and returns the subject's fate and whether the action ran.
fn subject_fate(composition: Composition, mode: Mode, own: Own, granted: bool) -> (Fate, bool) {
    let asks = Effects::of([Effect::Route]);
    let grant = if granted { asks } else { Effects::NONE };
    let refused = outside_grant(Some(grant), asks);
    let subject = if refused.is_empty() {
        own.verdict()
    } else {
        Verdict::host_error(HostError::VerdictInvalid)
    };
    let verdicts = vec![subject.clone(), Verdict::allow()];
    let mut ctx = ctx();
    let mut composer = Composer::new(Plan {
        composition,
        mode,
        point: InterceptionPoint::PreToolCall,
        interceptors: verdicts.len(),
        resolver: true,
        limits: hookwire::ContextLimits::default(),
    });
    let mut step = composer.start();
    let combined = loop {
        step = match step {
            Step::Dispatch(i) => composer.on_verdict(i, verdicts[i].clone(), &mut ctx),
            Step::DispatchAll => composer.on_verdicts(verdicts.clone(), &mut ctx),
            Step::Consult { .. } => {
                composer.on_resolution(Resolved::Lifted(Verdict::allow()), &mut ctx)
            }
            Step::Done(c) => break c,
        };
    };
    let ran = mode == Mode::EvaluateOnly || combined.verdict.is_permit();
    let combined_permits = mode == Mode::Enforce && combined.verdict.is_permit();
    let mut answers = Answers::default();
    let extensions = if refused.is_empty() {
        ext(json!({"route": {"executor": "sandbox"}}))
    } else {
        Map::new()
    };
    answers.answered("subject", subject.is_permit(), asks, refused, extensions);
    let settled = answers.settle(mode, combined_permits);
    let fate = match settled.facts["subject"]["fate"].as_str() {
        Some("released") => Fate::Released,
        Some("refused") => Fate::Refused,
        Some("evaluate_only") => Fate::EvaluateOnly,
        Some("not_permitted") => Fate::NotPermitted,
        Some("blocked") => Fate::Blocked,
        other => panic!("no fate: {other:?}"),
    };
    assert_eq!(
        settled.released.is_empty(),
        fate != Fate::Released,
        "released iff the fate says so"
    );
    (fate, ran)
}

#[test]
fn the_table_under_enforcement_with_the_grant() {
    use Fate::{Blocked, NotPermitted, Released};
    // Per composition, per own verdict (allow, transform, warn, deny,
    // escalate lifted): the fate, and whether the action ran. A deny
    // never releases, even where the profile lets the action run (an
    // approved escalation; a plain deny lifted as a disagreement under
    // unanimous/approval); a permit is blocked where the profile blocks.
    let expected: [(&str, [(Fate, bool); 5]); 7] = [
        (
            "first_deny/stop",
            [
                (Released, true),
                (Released, true),
                (Released, true),
                (NotPermitted, false),
                (NotPermitted, true),
            ],
        ),
        (
            "first_deny/resume",
            [
                (Released, true),
                (Released, true),
                (Released, true),
                (NotPermitted, false),
                (NotPermitted, true),
            ],
        ),
        (
            "run_all",
            [
                (Released, true),
                (Released, true),
                (Released, true),
                (NotPermitted, false),
                (NotPermitted, true),
            ],
        ),
        (
            "strictest/deny",
            [
                (Released, true),
                (Released, true),
                (Released, true),
                (NotPermitted, false),
                (NotPermitted, true),
            ],
        ),
        (
            "strictest/approval",
            [
                (Released, true),
                (Released, true),
                (Released, true),
                (NotPermitted, false),
                (NotPermitted, true),
            ],
        ),
        (
            "unanimous/deny",
            [
                (Released, true),
                (Blocked, false),
                (Released, true),
                (NotPermitted, false),
                (NotPermitted, false),
            ],
        ),
        (
            "unanimous/approval",
            [
                (Released, true),
                (Released, true),
                (Released, true),
                (NotPermitted, true),
                (NotPermitted, true),
            ],
        ),
    ];
    for ((name, composition), (expected_name, row)) in compositions().into_iter().zip(expected) {
        assert_eq!(name, expected_name);
        for (own, want) in Own::ALL.into_iter().zip(row) {
            let got = subject_fate(composition, Mode::Enforce, own, true);
            assert_eq!(got, want, "{name}, own verdict {own:?}");
        }
    }
}

#[test]
fn the_table_in_evaluate_only_and_outside_the_grant() {
    for (name, composition) in compositions() {
        for own in Own::ALL {
            // Shadow mode: every action runs, no ask acts.
            assert_eq!(
                subject_fate(composition, Mode::EvaluateOnly, own, true),
                (Fate::EvaluateOnly, true),
                "{name}, own verdict {own:?}"
            );
            // Outside the grant: refused in both modes, the slot a plain
            // deny that blocks under enforcement — except where the
            // profile offers every disagreement to the approval seam,
            // which lifts it; the refused asks stay dropped.
            assert_eq!(
                subject_fate(composition, Mode::Enforce, own, false),
                (Fate::Refused, name == "unanimous/approval"),
                "{name}, own verdict {own:?}"
            );
            assert_eq!(
                subject_fate(composition, Mode::EvaluateOnly, own, false),
                (Fate::Refused, true),
                "{name}, own verdict {own:?}"
            );
        }
    }
}
