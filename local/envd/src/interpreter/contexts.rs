//! One sandbox's contexts: made, found and removed, each with its kernel;
//! the default context of each language made once, at the sandbox's start
//! where its template says so ([`Interpreter::start_defaults`]), else on
//! first use.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use e2b_wire::interpreter::Context;

use super::context::ContextKernel;
use super::kernel::KernelSpawner;
use super::language::Language;

/// Most contexts (each one a kernel process) a sandbox may have.
pub const MAX_CONTEXTS: usize = 32;

/// Working directory of contexts created without one.
pub const DEFAULT_CWD: &str = "/home/user";

/// One sandbox's code interpreter: its contexts and their kernels.
pub struct Interpreter {
    spawner: Arc<dyn KernelSpawner>,
    registry: Mutex<Registry>,
    /// Serialises creation of default contexts, so two first executions do
    /// not start two default kernels.
    default_creation: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct Registry {
    /// Contexts in creation order.
    contexts: Vec<Arc<ContextKernel>>,
    /// The default context id of each language.
    defaults: HashMap<Language, String>,
    /// Set by [`Interpreter::shutdown`]: nothing new starts.
    closed: bool,
}

/// Why a context could not be found or made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ContextError {
    /// No such context (404).
    NotFound(String),
    /// A language this server has no kernel for (400).
    Unavailable(String),
    /// A kernel that failed to start, or a shut-down interpreter (500).
    Failed(String),
}

impl Interpreter {
    /// An interpreter whose kernels `spawner` starts.
    pub fn new(spawner: Arc<dyn KernelSpawner>) -> Arc<Interpreter> {
        Arc::new(Interpreter {
            spawner,
            registry: Mutex::new(Registry::default()),
            default_creation: tokio::sync::Mutex::new(()),
        })
    }

    /// Kills all its kernels (the sandbox is killed or paused); later
    /// requests fail.
    pub async fn shutdown(&self) {
        let contexts = {
            let mut registry = self.registry();
            registry.closed = true;
            registry.defaults.clear();
            std::mem::take(&mut registry.contexts)
        };
        for context in contexts {
            context.close().await;
        }
    }

    fn registry(&self) -> std::sync::MutexGuard<'_, Registry> {
        // A panic while holding this lock cannot leave the registry
        // inconsistent (every change is a single insert or remove).
        self.registry.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The contexts that exist, in creation order.
    pub(crate) fn list(&self) -> Vec<Context> {
        self.registry()
            .contexts
            .iter()
            .map(|c| c.info.clone())
            .collect()
    }

    pub(crate) fn find(&self, id: &str) -> Result<Arc<ContextKernel>, ContextError> {
        self.registry()
            .contexts
            .iter()
            .find(|c| c.info.id == id)
            .cloned()
            .ok_or_else(|| ContextError::NotFound(format!("Context {id} not found")))
    }

    /// Creates a context and starts its kernel.
    pub(crate) async fn create(
        &self,
        language: Option<&str>,
        cwd: Option<&str>,
    ) -> Result<Arc<ContextKernel>, ContextError> {
        let language =
            Language::parse(language.unwrap_or("python")).map_err(ContextError::Unavailable)?;
        self.start_context(language, cwd.unwrap_or(DEFAULT_CWD), false)
            .await
    }

    /// The default context of a language, created on first use.
    pub(crate) async fn default_context(
        &self,
        language: Option<&str>,
    ) -> Result<Arc<ContextKernel>, ContextError> {
        let language =
            Language::parse(language.unwrap_or("python")).map_err(ContextError::Unavailable)?;
        let _creating = self.default_creation.lock().await;
        let existing = {
            let registry = self.registry();
            registry
                .defaults
                .get(&language)
                .and_then(|id| registry.contexts.iter().find(|c| &c.info.id == id).cloned())
        };
        match existing {
            Some(context) => Ok(context),
            None => self.start_context(language, DEFAULT_CWD, true).await,
        }
    }

    /// Makes the default contexts of `languages` at once, so they are
    /// listed from the start, and starts their kernels in the background,
    /// one after the other (an execution in one waits for its start). A
    /// kernel that fails to start is started again at the context's first
    /// execution, which then says why. Unknown languages are skipped.
    pub fn start_defaults(self: &Arc<Self>, languages: &[String]) {
        let mut starting = Vec::new();
        {
            let mut registry = self.registry();
            for language in languages.iter().filter_map(|l| Language::parse(l).ok()) {
                if registry.closed || registry.defaults.contains_key(&language) {
                    continue;
                }
                let context = ContextKernel::new(
                    new_context_id(),
                    language,
                    DEFAULT_CWD.to_string(),
                    self.spawner.clone(),
                );
                registry.defaults.insert(language, context.info.id.clone());
                registry.contexts.push(context.clone());
                starting.push(context);
            }
        }
        tokio::spawn(async move {
            for context in starting {
                let mut state = context.lock().await;
                if let Err(e) = context.ensure_started(&mut state).await {
                    tracing::debug!(
                        "a default {} context did not start: {e}",
                        context.info.language
                    );
                }
            }
        });
    }

    async fn start_context(
        &self,
        language: Language,
        cwd: &str,
        is_default: bool,
    ) -> Result<Arc<ContextKernel>, ContextError> {
        {
            let registry = self.registry();
            if registry.closed {
                return Err(ContextError::Failed("The sandbox is shutting down".into()));
            }
            if registry.contexts.len() >= MAX_CONTEXTS {
                return Err(ContextError::Failed(format!(
                    "Too many contexts: a sandbox has at most {MAX_CONTEXTS}; delete one first"
                )));
            }
        }
        let context = ContextKernel::new(
            new_context_id(),
            language,
            cwd.to_string(),
            self.spawner.clone(),
        );
        {
            let mut state = context.lock().await;
            context
                .ensure_started(&mut state)
                .await
                .map_err(ContextError::Failed)?;
        }
        let registered = {
            let mut registry = self.registry();
            if !registry.closed {
                if is_default {
                    registry.defaults.insert(language, context.info.id.clone());
                }
                registry.contexts.push(context.clone());
            }
            !registry.closed
        };
        if !registered {
            context.close().await;
            return Err(ContextError::Failed("The sandbox is shutting down".into()));
        }
        Ok(context)
    }

    /// Removes a context and kills its kernel.
    pub(crate) async fn remove(&self, id: &str) -> Result<(), ContextError> {
        let context = {
            let mut registry = self.registry();
            let index = registry
                .contexts
                .iter()
                .position(|c| c.info.id == id)
                .ok_or_else(|| ContextError::NotFound(format!("Context {id} not found")))?;
            registry.defaults.retain(|_, default_id| default_id != id);
            registry.contexts.remove(index)
        };
        context.close().await;
        Ok(())
    }
}

/// A kernel id in the UUID format Jupyter uses.
fn new_context_id() -> String {
    let n: u128 = rand::random();
    let hex = format!("{n:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}
