//! A compiled policy set: the modules and data of one directory, checked
//! against the load-time half of the contract, ready to decide.
//!
//! Loading finds the *decision packages* (every package under `hookwire`
//! that declares a contract rule), evaluates each one's `points` once, and
//! adds one generated module, `hookwire_internal`, holding a rule per
//! point that gathers the decision rules of the packages applying there,
//! so that one decision is one evaluation. Each point's rule is compiled
//! once, at load, to a regorus VM program (`rvm`); a decision runs it on a
//! pooled VM with the context as `input` and a wall-clock bound. Rego tests
//! (and a point whose rule the VM compiler does not support) run on the
//! tree-walking interpreter, on a clone of the prepared engine.

use std::collections::{BTreeMap, BTreeSet};
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hookwire::{AgentContext, InterceptionPoint, Verdict};
use regorus::rvm::program::Program;
use regorus::rvm::vm::{RegoVM, VmError};
use regorus::utils::limits::ExecutionTimerConfig;
use regorus::{Engine, Value as RegoValue};
use serde_json::Value;

use crate::cedar::CedarSet;
use crate::contract::{self, DECISION_RULES, POINTS_RULE};
use crate::error::Error;
use crate::eval;
use crate::generated::{INTERNAL_PACKAGE, generated_module, rego_ref, rule_for};
use crate::input::InputPaths;
use crate::load::{self, Sources};
use crate::report::{DecisionPackage, PolicyOptions, TestRule};

/// The root package of decision packages.
const DECISION_ROOT: &str = "hookwire";

/// Engines kept for reuse between evaluations (more are cloned on demand).
const POOL_MAX: usize = 64;

/// One point's decision rule as a VM program, and the VMs that ran it
/// cleanly, for reuse.
struct PointProgram {
    program: Arc<Program>,
    vms: Mutex<Vec<RegoVM>>,
}

impl std::fmt::Debug for PointProgram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PointProgram").finish_non_exhaustive()
    }
}

/// The compiled policies and data of one directory.
#[derive(Debug)]
pub struct PolicySet {
    dir: PathBuf,
    options: PolicyOptions,
    /// Prepared engine every evaluation starts from (cloned, never used
    /// directly, so it never holds an input).
    template: Engine,
    /// Engines that finished an evaluation cleanly, for reuse.
    pool: Mutex<Vec<Engine>>,
    /// Each point's decision rule compiled for the VM, when the compiler
    /// supports it (else the point is evaluated by the interpreter).
    programs: BTreeMap<InterceptionPoint, PointProgram>,
    /// The data documents, as the VM needs them.
    data: RegoValue,
    /// How much of a context the modules read.
    input: InputPaths,
    packages: Vec<DecisionPackage>,
    /// For each point, the names of the packages deciding there, in the
    /// order of the generated rule's documents.
    by_point: BTreeMap<InterceptionPoint, Vec<String>>,
    /// The Rego test rules, then the Cedar test cases.
    tests: Vec<TestRule>,
    files: usize,
    /// The directory's Cedar policies (decision packages beside Rego's).
    cedar: CedarSet,
}

impl PolicySet {
    /// Reads and compiles `dir` (the layout: `docs/policies.md`).
    pub fn load(dir: &Path, options: PolicyOptions) -> Result<Self, Error> {
        let sources = load::read_dir(dir)?;
        Self::compile(dir, &sources, options)
    }

    /// Compiles sources already read (a bundle's), labelled relative to
    /// `dir`.
    pub(crate) fn compile(
        dir: &Path,
        sources: &Sources,
        options: PolicyOptions,
    ) -> Result<Self, Error> {
        let mut engine = Engine::new();
        engine.set_execution_timer_config(timer(options));
        eval::guard_engine(&mut engine).map_err(|e| Error::Compile(format!("{e:#}")))?;
        let label = |path: &Path| {
            path.strip_prefix(dir)
                .unwrap_or(path)
                .to_string_lossy()
                .into_owned()
        };
        for module in &sources.modules {
            engine
                .add_policy(label(&module.path), module.text.clone())
                .map_err(|e| Error::Parse {
                    path: module.path.clone(),
                    message: format!("{e:#}"),
                })?;
            crate::patterns::check_literal_patterns(&label(&module.path), &module.text)?;
        }
        for doc in &sources.data {
            let data_error = |message: String| Error::Data {
                path: doc.path.clone(),
                message,
            };
            let value = if doc.yaml {
                RegoValue::from_yaml_str(&doc.text)
            } else {
                RegoValue::from_json_str(&doc.text)
            }
            .map_err(|e| data_error(format!("{e:#}")))?;
            if doc.at.is_empty() && value.as_object().is_err() {
                return Err(data_error(
                    "a document at the root must be an object".into(),
                ));
            }
            let placed = doc.at.iter().rev().fold(value, |inner, key| {
                let mut object = RegoValue::new_object();
                if let Ok(map) = object.as_object_mut() {
                    map.insert(RegoValue::from(key.as_str()), inner);
                }
                object
            });
            engine
                .add_data(placed)
                .map_err(|e| data_error(format!("{e:#}")))?;
        }

        let cedar = CedarSet::load(
            dir,
            &sources.cedar,
            &sources.cedar_schemas,
            &sources.cedar_cases,
        )?;
        let (packages, mut tests) = discover(&engine, sources, dir)?;
        tests.extend(cedar.cases().iter().map(|c| c.rule().clone()));
        if packages.is_empty() && cedar.is_empty() {
            return Err(Error::NoDecisions(dir.to_path_buf()));
        }
        let packages = packages
            .into_iter()
            .map(|(components, rules)| {
                let points = package_points(&mut engine, &components, options.eval_limit)?;
                let name = components.join(".");
                Ok((
                    components,
                    DecisionPackage {
                        name,
                        points,
                        rules,
                    },
                ))
            })
            .collect::<Result<Vec<_>, Error>>()?;

        let (module, by_point) = generated_module(&packages);
        engine
            .add_policy(format!("<{INTERNAL_PACKAGE}>"), module)
            .map_err(|e| Error::Compile(format!("{e:#}")))?;
        // Prepares the engine (analysis, rule gathering) once, here, so
        // that clones start prepared and a compile error surfaces at load.
        engine
            .eval_rule(format!("data.{INTERNAL_PACKAGE}.ready"))
            .map_err(|e| eval::engine_error(&e, options.eval_limit, Error::Compile))?;

        // Every point is compiled (it refuses calls to missing built-ins);
        // the programs run only when `compiled` is set.
        let mut programs = BTreeMap::new();
        for point in by_point.keys() {
            let rule = format!("data.{INTERNAL_PACKAGE}.{}", rule_for(*point));
            if let Some(program) = eval::compile_point(&engine, &rule)?
                && options.compiled
            {
                let vms = Mutex::new(Vec::new());
                programs.insert(*point, PointProgram { program, vms });
            }
        }
        let data = engine.get_data();
        Ok(Self {
            dir: dir.to_path_buf(),
            options,
            template: engine,
            pool: Mutex::new(Vec::new()),
            programs,
            data,
            input: InputPaths::scan(sources.modules.iter().map(|m| m.text.as_str())),
            packages: packages
                .into_iter()
                .map(|(_, p)| p)
                .chain(cedar.packages())
                .collect(),
            by_point,
            tests,
            files: sources.modules.len()
                + sources.data.len()
                + sources.cedar.len()
                + sources.cedar_schemas.len()
                + sources.cedar_cases.len(),
            cedar,
        })
    }

    /// The directory this set was loaded from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The evaluation options.
    pub fn options(&self) -> PolicyOptions {
        self.options
    }

    /// The decision packages, by name.
    pub fn packages(&self) -> &[DecisionPackage] {
        &self.packages
    }

    /// The points at least one package decides at, in loop order: what
    /// `Describe` declares.
    pub fn points(&self) -> Vec<InterceptionPoint> {
        let mut points = self.cedar.points();
        points.extend(self.by_point.keys().copied());
        points.into_iter().collect()
    }

    /// How many files (modules and data documents) the set was built from.
    pub fn file_count(&self) -> usize {
        self.files
    }

    /// The points whose decisions run as VM programs (see
    /// [`PolicyOptions::compiled`]); the others run on the interpreter.
    pub fn compiled_points(&self) -> Vec<InterceptionPoint> {
        self.programs.keys().copied().collect()
    }

    /// The tests the set declares: Rego `test_*` rules, then the cases of
    /// `*.cedartest.json` files.
    pub fn tests(&self) -> &[TestRule] {
        &self.tests
    }

    /// The verdict for `ctx`: the decision documents of the packages that
    /// decide at its point, combined by the contract ([`crate::contract`]).
    /// At a point no package decides at, `allow`.
    pub fn decide(&self, ctx: &AgentContext) -> Result<Verdict, Error> {
        let documents = self.decision_documents(ctx)?;
        contract::combine(ctx.point(), &documents)
    }

    /// The raw decision documents for `ctx`, one `(package, {rule: value})`
    /// per package (Rego package or Cedar file) deciding at its point, in
    /// name order; undefined rules are `null`.
    pub fn decision_documents(&self, ctx: &AgentContext) -> Result<Vec<(String, Value)>, Error> {
        let mut documents = self.rego_documents(ctx)?;
        documents.extend(self.cedar.documents(ctx, self.options.eval_limit)?);
        documents.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(documents)
    }

    /// The Rego packages' decision documents for `ctx`.
    fn rego_documents(&self, ctx: &AgentContext) -> Result<Vec<(String, Value)>, Error> {
        let point = ctx.point();
        let Some(names) = self.by_point.get(&point) else {
            return Ok(Vec::new());
        };
        let input = self.input.convert(ctx)?;
        let result = match self.programs.get(&point) {
            Some(program) => self.execute(program, input)?,
            None => self.evaluate(
                input,
                &format!("data.{INTERNAL_PACKAGE}.{}", rule_for(point)),
            )?,
        };
        let Value::Array(documents) = result else {
            return Err(Error::Evaluation(
                "the generated decision rule is not an array".into(),
            ));
        };
        if documents.len() != names.len() {
            return Err(Error::Evaluation(
                "the generated decision rule lost a package".into(),
            ));
        }
        Ok(names.iter().cloned().zip(documents).collect())
    }

    /// Runs a point's compiled `program` with `input` on a pooled VM,
    /// bounded by time (the VM's instruction count is not limited).
    fn execute(&self, compiled: &PointProgram, input: RegoValue) -> Result<Value, Error> {
        let pooled = compiled.vms.lock().ok().and_then(|mut vms| vms.pop());
        let mut vm = match pooled {
            Some(vm) => vm,
            None => {
                let mut vm = RegoVM::new();
                vm.set_max_instructions(usize::MAX);
                vm.set_execution_timer_config(Some(self.timer()));
                vm.load_program(compiled.program.clone());
                vm.set_data(self.data.clone())
                    .map_err(|e| Error::Evaluation(format!("{e}")))?;
                vm
            }
        };
        vm.set_input(input);
        let _ = eval::take_refusal();
        let started = Instant::now();
        let value = vm.execute().map_err(|e| match e {
            VmError::TimeLimitExceeded { .. } => Error::Bounded {
                limit: self.options.eval_limit,
            },
            other => match eval::take_refusal() {
                Some(refusal) => Error::Limit(refusal),
                None => Error::Evaluation(format!("{other}")),
            },
        })?;
        self.within_bound(started)?;
        if let Ok(mut vms) = compiled.vms.lock()
            && vms.len() < POOL_MAX
        {
            vms.push(vm);
        }
        to_json(&value)
    }

    /// An evaluation that returned past its bound (inside one built-in, the
    /// engine's timer is not consulted) is an error, never a verdict.
    fn within_bound(&self, started: Instant) -> Result<(), Error> {
        if started.elapsed() > self.options.eval_limit {
            return Err(Error::Bounded {
                limit: self.options.eval_limit,
            });
        }
        Ok(())
    }

    fn timer(&self) -> ExecutionTimerConfig {
        timer(self.options)
    }

    /// Evaluates `rule` with `input` on a pooled engine, bounded.
    fn evaluate(&self, input: RegoValue, rule: &str) -> Result<Value, Error> {
        let pooled = self.pool.lock().ok().and_then(|mut pool| pool.pop());
        let mut engine = pooled.unwrap_or_else(|| self.template.clone());
        engine.set_input(input);
        let _ = eval::take_refusal();
        let started = Instant::now();
        let value = engine.eval_rule(rule.to_owned()).map_err(|e| {
            eval::evaluation_error(&e, self.options.eval_limit, started, Error::Evaluation)
        })?;
        self.within_bound(started)?;
        // Only an engine that finished cleanly goes back to the pool.
        if let Ok(mut pool) = self.pool.lock()
            && pool.len() < POOL_MAX
        {
            pool.push(engine);
        }
        to_json(&value)
    }

    /// The prepared engine, for the test runner to clone.
    pub(crate) fn template(&self) -> &Engine {
        &self.template
    }

    /// One package's decision document for `ctx` (`{rule: value}`,
    /// undefined rules `null`), evaluated alone on the interpreter: what
    /// `policy bench` times per package.
    pub fn package_document(&self, ctx: &AgentContext, package: &str) -> Result<Value, Error> {
        let index = self
            .packages
            .iter()
            .position(|p| p.name == package)
            .ok_or_else(|| Error::Evaluation(format!("no decision package {package}")))?;
        let input = self.input.convert(ctx)?;
        self.evaluate(input, &format!("data.{INTERNAL_PACKAGE}.pkg{index}"))
    }

    /// The Cedar policies and test cases of the set.
    pub(crate) fn cedar(&self) -> &CedarSet {
        &self.cedar
    }
}

/// The wall-clock bound of one evaluation, checked every 32 steps.
fn timer(options: PolicyOptions) -> ExecutionTimerConfig {
    ExecutionTimerConfig {
        limit: options.eval_limit,
        check_interval: NonZeroU32::new(32).unwrap_or(NonZeroU32::MIN),
    }
}

/// A Rego value as JSON; an undefined value is an error (the generated
/// rules never produce one).
fn to_json(value: &RegoValue) -> Result<Value, Error> {
    if matches!(value, RegoValue::Undefined) {
        return Err(Error::Evaluation("the decision rule is undefined".into()));
    }
    serde_json::to_value(value)
        .map_err(|e| Error::Evaluation(format!("the decision does not convert to JSON: {e}")))
}

/// Package components of decision packages with the contract rules each
/// declares, and the test rules of all packages.
#[allow(clippy::type_complexity)]
fn discover(
    engine: &Engine,
    sources: &Sources,
    dir: &Path,
) -> Result<(Vec<(Vec<String>, Vec<&'static str>)>, Vec<TestRule>), Error> {
    let rows = engine
        .get_policy_package_components()
        .map_err(|e| Error::Compile(format!("{e:#}")))?;
    let mut packages: BTreeMap<Vec<String>, BTreeSet<&'static str>> = BTreeMap::new();
    let mut tests = Vec::new();
    let mut seen_tests = BTreeSet::new();
    for (row, module) in rows.iter().zip(&sources.modules) {
        let package = row.components.join(".");
        let declares = |rule: &str| {
            engine
                .has_declared_rule_rooted_at(&row.source_file, rule)
                .map_err(|e| Error::Compile(format!("{}: {e:#}", row.source_file)))
        };
        if row.components.first().map(String::as_str) == Some(INTERNAL_PACKAGE) {
            return Err(Error::Contract {
                package,
                message: format!("the package {INTERNAL_PACKAGE} is reserved"),
            });
        }
        if row.components.first().map(String::as_str) == Some(DECISION_ROOT) {
            let entry = packages.entry(row.components.clone()).or_default();
            for rule in DECISION_RULES.into_iter().chain([POINTS_RULE]) {
                if declares(rule)? {
                    entry.insert(rule);
                }
            }
        }
        for name in module.test_candidates() {
            if declares(name)? && seen_tests.insert((row.components.clone(), name.to_owned())) {
                tests.push(TestRule {
                    package: package.clone(),
                    name: name.to_owned(),
                    file: row.source_file.clone(),
                    rule_path: format!("{}.{name}", rego_ref(&row.components)),
                });
            }
        }
    }
    let _ = dir;
    let mut decision = Vec::new();
    for (components, rules) in packages {
        let declares_points = rules.contains(POINTS_RULE);
        let decision_rules: Vec<&'static str> = DECISION_RULES
            .into_iter()
            .filter(|r| rules.contains(r))
            .collect();
        match (declares_points, decision_rules.is_empty()) {
            // A helper or test package under `hookwire`.
            (false, true) => {}
            (false, false) => {
                return Err(Error::Contract {
                    package: components.join("."),
                    message: format!(
                        "declares {} but no `points` (the set of points it decides at)",
                        decision_rules.join(", ")
                    ),
                });
            }
            (true, _) => decision.push((components, decision_rules)),
        }
    }
    Ok((decision, tests))
}

/// `points` of one package, evaluated without input: a non-empty set (or
/// array) of point names.
fn package_points(
    engine: &mut Engine,
    components: &[String],
    limit: Duration,
) -> Result<Vec<InterceptionPoint>, Error> {
    let package = components.join(".");
    let contract = |message: &str| Error::Contract {
        package: package.clone(),
        message: message.to_owned(),
    };
    let value = engine
        .eval_rule(format!("{}.{POINTS_RULE}", rego_ref(components)))
        .map_err(|e| eval::engine_error(&e, limit, Error::Compile))?;
    let names: Vec<RegoValue> = match value {
        RegoValue::Set(set) => set.iter().cloned().collect(),
        RegoValue::Array(items) => items.iter().cloned().collect(),
        RegoValue::Undefined => {
            return Err(contract(
                "`points` is undefined; it must be a constant set of point names (it cannot depend on input)",
            ));
        }
        _ => return Err(contract("`points` must be a set of point names")),
    };
    let mut points = BTreeSet::new();
    for name in names {
        let point = name
            .as_string()
            .ok()
            .and_then(|s| s.parse::<InterceptionPoint>().ok())
            .ok_or_else(|| {
                contract(&format!("`points` holds {name}, which is not a point name"))
            })?;
        points.insert(point);
    }
    if points.is_empty() {
        return Err(contract("`points` is empty"));
    }
    Ok(points.into_iter().collect())
}
