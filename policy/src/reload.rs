//! The serving policy set and its hot reload.
//!
//! [`Policies`] holds the current [`PolicySet`] behind an atomic pointer:
//! an evaluation takes the set that is current when it starts and finishes
//! on it, while a reload swaps in a new set for the evaluations that start
//! after. A set that fails to load never replaces a serving one: the
//! previous set keeps deciding, and the failure is reported three ways —
//! the [`ReloadEvent`] given to the watcher's callback (the CLI prints it),
//! a `tracing` error, and [`Policies::status`], which the service's
//! `Describe` description also shows.
//!
//! [`Policies::watch`] reloads on changes to the files a set is read from
//! (other files in the directory are ignored, a decision log kept there
//! included): a `notify` watcher on the directory (recursive), debounced
//! so that an editor's burst of writes is one reload.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use arc_swap::ArcSwap;
use hookwire::{AgentContext, Verdict};
use notify::{RecursiveMode, Watcher as _};

use crate::decision_log::PackageRules;
use crate::error::Error;
use crate::eval::{BoundStatus, Pool};
use crate::report::PolicyOptions;
use crate::set::PolicySet;

/// How long the directory must be quiet before a change is reloaded.
pub const RELOAD_DEBOUNCE: Duration = Duration::from_millis(150);

/// The state of the policies being served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReloadStatus {
    /// Increases by one with every set that replaces the serving one (the
    /// initial load is generation 1).
    pub generation: u64,
    /// Reloads that were rejected since the service started.
    pub rejected: u64,
    /// Why the most recent reload attempt failed, while the previous set
    /// keeps serving; `None` once a later reload succeeds.
    pub last_error: Option<String>,
    /// The bundle revision serving, when the set came from a bundle.
    pub revision: Option<String>,
}

/// What one reload attempt did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReloadEvent {
    /// A new set is serving.
    Reloaded {
        /// Its generation.
        generation: u64,
        /// How many decision packages it has.
        packages: usize,
    },
    /// The new files do not load; the previous set keeps serving.
    Rejected {
        /// The generation still serving.
        serving: u64,
        /// Why the new files were refused.
        error: String,
    },
}

/// The policies of one directory as served: the current set, swapped
/// atomically on reload.
#[derive(Debug)]
pub struct Policies {
    dir: PathBuf,
    options: PolicyOptions,
    current: ArcSwap<PolicySet>,
    status: Mutex<ReloadStatus>,
    /// The workers served decisions run on ([`Policies::decide_bounded`]).
    workers: Pool,
}

impl Policies {
    /// Loads `dir`; fails if the initial set does not load (there is no
    /// previous set to fall back to).
    pub fn load(dir: impl Into<PathBuf>, options: PolicyOptions) -> Result<Arc<Self>, Error> {
        let dir = dir.into();
        let set = PolicySet::load(&dir, options)?;
        Ok(Arc::new(Self {
            dir,
            options,
            current: ArcSwap::from_pointee(set),
            status: Mutex::new(ReloadStatus {
                generation: 1,
                rejected: 0,
                last_error: None,
                revision: None,
            }),
            workers: Pool::per_core()?,
        }))
    }

    /// Serves `set`, already compiled (from a bundle, `revision`), as
    /// generation 1; `origin` names where it came from. Later sets come
    /// through [`Policies::replace`]. Fails only when the evaluation
    /// workers cannot start.
    pub fn from_set(
        origin: impl Into<PathBuf>,
        set: PolicySet,
        revision: Option<String>,
    ) -> Result<Arc<Self>, Error> {
        Ok(Arc::new(Self {
            dir: origin.into(),
            options: set.options(),
            current: ArcSwap::from_pointee(set),
            status: Mutex::new(ReloadStatus {
                generation: 1,
                rejected: 0,
                last_error: None,
                revision,
            }),
            workers: Pool::per_core()?,
        }))
    }

    /// The directory served.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The set serving now.
    pub fn current(&self) -> Arc<PolicySet> {
        self.current.load_full()
    }

    /// Generation, rejections, and the last reload error.
    pub fn status(&self) -> ReloadStatus {
        self.status
            .lock()
            .map(|s| s.clone())
            .unwrap_or_else(|poisoned| poisoned.into_inner().clone())
    }

    /// The verdict of the serving set for `ctx`, evaluated on the calling
    /// thread (an evaluation that returns past its bound is still an
    /// error, but the caller waits for it to return).
    pub fn decide(&self, ctx: &AgentContext) -> Result<Verdict, Error> {
        self.current.load().decide(ctx)
    }

    /// [`Policies::decide_bounded`], with what each package contributed,
    /// for the decision log and metrics: evaluated on the evaluation
    /// workers under the same bound.
    pub async fn decide_explained(
        &self,
        ctx: &AgentContext,
    ) -> Result<(Verdict, Vec<PackageRules>), Error> {
        let ctx = ctx.clone();
        self.on_workers(move |set| {
            let documents = set.decision_documents(&ctx)?;
            let verdict = crate::contract::combine(ctx.point(), &documents)?;
            Ok((verdict, package_rules(&documents)))
        })
        .await
    }

    /// The verdict of the serving set for `ctx`, evaluated on the
    /// evaluation workers: the answer arrives by the evaluation bound
    /// ([`Error::Bounded`]) even while the evaluation is still inside a
    /// built-in, and is [`Error::Saturated`] at once when every worker is
    /// stuck past its bound. What the service decides with.
    pub async fn decide_bounded(&self, ctx: &AgentContext) -> Result<Verdict, Error> {
        let ctx = ctx.clone();
        self.on_workers(move |set| set.decide(&ctx)).await
    }

    /// Runs `evaluate` on the serving set on the evaluation workers,
    /// answered by the set's bound as [`Policies::decide_bounded`] is: for
    /// any evaluation served (a decision with what each package decided,
    /// say).
    pub async fn on_workers<T: Send + 'static>(
        &self,
        evaluate: impl FnOnce(&PolicySet) -> Result<T, Error> + Send + 'static,
    ) -> Result<T, Error> {
        let set = self.current();
        let limit = set.options().eval_limit;
        self.workers.run(limit, move || evaluate(&set)).await
    }

    /// What the evaluation bound did: cut-off and refused evaluations, the
    /// workers stuck now.
    pub fn bound_status(&self) -> BoundStatus {
        self.workers.status()
    }

    /// Loads the directory again: swaps the new set in, or keeps the
    /// serving one and records why the new one was refused.
    pub fn reload(&self) -> ReloadEvent {
        self.replace(PolicySet::load(&self.dir, self.options), None)
    }

    /// Swaps `loaded` in (a bundle's set, with its `revision`), or keeps
    /// the serving set and records why `loaded` failed, as a reload does.
    pub fn replace(
        &self,
        loaded: Result<PolicySet, Error>,
        revision: Option<String>,
    ) -> ReloadEvent {
        let mut status = self
            .status
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        match loaded {
            Ok(set) => {
                let packages = set.packages().len();
                self.current.store(Arc::new(set));
                status.generation += 1;
                status.last_error = None;
                status.revision = revision;
                tracing::info!(generation = status.generation, packages, dir = %self.dir.display(), "policies reloaded");
                ReloadEvent::Reloaded {
                    generation: status.generation,
                    packages,
                }
            }
            Err(e) => {
                status.rejected += 1;
                status.last_error = Some(e.to_string());
                tracing::error!(serving = status.generation, error = %e, dir = %self.dir.display(), "policy reload rejected; the previous policies keep serving");
                ReloadEvent::Rejected {
                    serving: status.generation,
                    error: e.to_string(),
                }
            }
        }
    }

    /// Reloads whenever a file under the directory changes, until the
    /// returned [`Watcher`] is dropped. `on_event` sees every attempt.
    pub fn watch(
        self: &Arc<Self>,
        on_event: impl Fn(&ReloadEvent) + Send + 'static,
    ) -> Result<Watcher, Error> {
        let (tx, rx) = mpsc::channel::<()>();
        // Only a file the set is read from is a change (see `load`):
        // writing any other (the service's own decision log, an editor's
        // hidden swap file, notes) never reloads, or a log kept in the
        // directory would reload it forever. A directory appearing may
        // bring such files; an event naming no path asks for a rescan.
        let read = |path: &Path| {
            path.file_name().is_some_and(|n| {
                let name = n.to_string_lossy();
                crate::load::is_source(&name) || (!name.starts_with('.') && path.is_dir())
            })
        };
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                let relevant = event.is_ok_and(|e| {
                    !e.kind.is_access() && (e.paths.is_empty() || e.paths.iter().any(|p| read(p)))
                });
                if relevant {
                    let _ = tx.send(());
                }
            })
            .map_err(|source| self.watch_error(source))?;
        watcher
            .watch(&self.dir, RecursiveMode::Recursive)
            .map_err(|source| self.watch_error(source))?;
        let policies = Arc::clone(self);
        let thread = thread::Builder::new()
            .name("hookwire-policy-reload".into())
            .spawn(move || {
                // Ends when the watcher (the only sender) is dropped.
                while rx.recv().is_ok() {
                    loop {
                        match rx.recv_timeout(RELOAD_DEBOUNCE) {
                            Ok(()) => {}
                            Err(RecvTimeoutError::Timeout) => break,
                            Err(RecvTimeoutError::Disconnected) => return,
                        }
                    }
                    on_event(&policies.reload());
                }
            })
            .map_err(|source| Error::Io {
                path: self.dir.clone(),
                source,
            })?;
        Ok(Watcher {
            _watcher: watcher,
            _thread: thread,
        })
    }

    fn watch_error(&self, source: notify::Error) -> Error {
        Error::Watch {
            path: self.dir.clone(),
            source,
        }
    }
}

/// The contract rules each package defined (non-empty), from its decision
/// document.
fn package_rules(documents: &[(String, serde_json::Value)]) -> Vec<PackageRules> {
    use serde_json::Value;
    documents
        .iter()
        .map(|(package, document)| {
            let rules = match document {
                Value::Object(rules) => rules
                    .iter()
                    .filter(|(_, v)| match v {
                        Value::Null => false,
                        Value::Array(a) => !a.is_empty(),
                        Value::Object(o) => !o.is_empty(),
                        _ => true,
                    })
                    .map(|(rule, _)| rule.clone())
                    .collect(),
                _ => Vec::new(),
            };
            PackageRules {
                package: package.clone(),
                rules,
            }
        })
        .collect()
}

/// Keeps a directory watched; dropping it stops the reloads.
#[derive(Debug)]
pub struct Watcher {
    _watcher: notify::RecommendedWatcher,
    _thread: thread::JoinHandle<()>,
}
