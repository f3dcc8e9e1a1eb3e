//! The module hookwire adds to every set, `hookwire_internal`: for each
//! package a copy of each contract rule it declares (defaulting to
//! `null`), one document per package (`pkg<i>`, what `policy bench` times
//! alone), and for each point one rule gathering the documents of the
//! packages deciding there, so that one decision is one evaluation.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use hookwire::InterceptionPoint;

use crate::report::DecisionPackage;

/// The package holding the generated rules; policies may not use it.
pub(crate) const INTERNAL_PACKAGE: &str = "hookwire_internal";

/// The name of the generated rule for a point (`input` is a Rego keyword,
/// so every point gets a prefix).
pub(crate) fn rule_for(point: InterceptionPoint) -> String {
    format!("at_{point}")
}

/// `data.a.b` for identifier components, `data.a["b-c"]` otherwise.
pub(crate) fn rego_ref(components: &[String]) -> String {
    let mut out = String::from("data");
    for c in components {
        let ident = c
            .chars()
            .next()
            .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
            && c.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_');
        if ident {
            out.push('.');
            out.push_str(c);
        } else {
            let quoted = serde_json::to_string(c).unwrap_or_default();
            let _ = write!(out, "[{quoted}]");
        }
    }
    out
}

/// The generated module: for each package and each contract rule it
/// declares, a copy defaulting to `null`; for each point, an array of one
/// object per package deciding there.
pub(crate) fn generated_module(
    packages: &[(Vec<String>, DecisionPackage)],
) -> (String, BTreeMap<InterceptionPoint, Vec<String>>) {
    let mut module = format!("package {INTERNAL_PACKAGE}\n\nready := true\n");
    let mut by_point: BTreeMap<InterceptionPoint, Vec<(usize, String)>> = BTreeMap::new();
    for (i, (components, package)) in packages.iter().enumerate() {
        let base = rego_ref(components);
        for rule in &package.rules {
            let _ = write!(
                module,
                "\ndefault p{i}_{rule} := null\np{i}_{rule} := {base}.{rule}\n"
            );
        }
        let fields: Vec<String> = package
            .rules
            .iter()
            .map(|rule| format!("\"{rule}\": p{i}_{rule}"))
            .collect();
        let _ = writeln!(module, "pkg{i} := {{{}}}", fields.join(", "));
        for point in &package.points {
            by_point
                .entry(*point)
                .or_default()
                .push((i, package.name.clone()));
        }
    }
    for (point, deciding) in &by_point {
        let _ = write!(module, "\n{} := [", rule_for(*point));
        for (n, (i, _)) in deciding.iter().enumerate() {
            if n > 0 {
                module.push_str(", ");
            }
            module.push('{');
            let (_, package) = &packages[*i];
            for (k, rule) in package.rules.iter().enumerate() {
                if k > 0 {
                    module.push_str(", ");
                }
                let _ = write!(module, "\"{rule}\": p{i}_{rule}");
            }
            module.push('}');
        }
        module.push_str("]\n");
    }
    let by_point = by_point
        .into_iter()
        .map(|(point, deciding)| (point, deciding.into_iter().map(|(_, n)| n).collect()))
        .collect();
    (module, by_point)
}
