//! `hookwire hooks serve` and `hookwire hook`: coding agents governed
//! through their own hooks (`hookwire-hooks`). The daemon is a long-lived
//! host answering each agent's hook payloads on its own route; the
//! command hook relays one payload from stdin to it and prints the
//! agent's output, failing closed in the agent's terms (exit 2, the
//! reason on stderr) when the daemon is down, slow or answers garbage.
//! `serve` has the daemon, `relay` the command hook; this module the
//! subcommands, `hooks install` and what they share. See `docs/hooks.md`.

mod relay;
mod serve;

pub(crate) use relay::{HookArgs, block, hook};
pub(crate) use serve::{ServeArgs, serve};

use std::path::PathBuf;

use hookwire_hooks::Agent;

use crate::error::CliError;

pub(crate) use hookwire_hooks::relay::token_from_file;

/// The `hooks` subcommands.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum HooksCommand {
    /// Serve the hook routes (`POST /v1/hooks/claude-code`, `/codex`, `/gemini-cli`,
    /// `/cursor`, `/copilot`) governed by a declared chain, until interrupted.
    Serve(Box<ServeArgs>),
    /// Write (or print) an agent's hook configuration pointing at
    /// `hookwire hook`, merged into its existing settings.
    Install(InstallArgs),
}

/// Where `hooks install` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Scope {
    /// The agent's project file under the current directory
    /// (`.claude/settings.json`, `.codex/hooks.json`,
    /// `.gemini/settings.json`, `.cursor/hooks.json`,
    /// `.github/hooks/hookwire.json`).
    Project,
    /// The agent's file under the home directory (`~/.claude/settings.json`,
    /// `$CODEX_HOME/hooks.json`, `~/.gemini/settings.json`,
    /// `~/.cursor/hooks.json`; Copilot has none).
    User,
}

/// How the agent reaches the daemon.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Transport {
    /// Claude Code with an `http://` `--endpoint` and no `--token-file`:
    /// an `http` hook (no process per event; `onFailure: "block"`);
    /// otherwise the command.
    Auto,
    /// The `hookwire hook` command hook, for every agent.
    Command,
    /// Claude Code's `http` hook posting to the daemon (needs an
    /// `http://` `--endpoint`).
    Http,
}

/// The options of `hookwire hooks install`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
hookwire hooks install --agent cursor --token-file ~/.config/hookwire/hooks-token --print\n  \
# Claude Code posting to the daemon itself; the token comes from its environment\n  \
hookwire hooks install --agent claude-code --endpoint http://127.0.0.1:8790 --token-env HOOKWIRE_HOOKS_TOKEN\n  \
# The complete path: hooks and model traffic through `hookwire gateway --hooks-token-env HOOKWIRE_HOOKS_TOKEN`\n  \
hookwire hooks install --agent claude-code --gateway http://127.0.0.1:8080\n  \
hookwire hooks install --agent codex --scope user --gateway http://127.0.0.1:8080 --token-file ~/.config/hookwire/hooks-token")]
pub(crate) struct InstallArgs {
    /// The agent (`claude-code`, `codex`, `gemini-cli`, `cursor`, `copilot`).
    #[arg(long, value_name = "NAME")]
    agent: String,
    /// Which configuration file to merge into.
    #[arg(long, value_enum, default_value = "project")]
    scope: Scope,
    /// Merge into this file instead of the scope's.
    #[arg(long, value_name = "FILE")]
    settings: Option<PathBuf>,
    /// Print the merged configuration instead of writing it.
    #[arg(long)]
    print: bool,
    /// The daemon's URL the hook command is given (else it reads
    /// `HOOKWIRE_HOOKS_ENDPOINT` when it runs).
    #[arg(long, value_name = "URL")]
    endpoint: Option<String>,
    /// The token file the hook command is given (else it reads
    /// `HOOKWIRE_HOOKS_TOKEN` when it runs).
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// How the agent reaches the daemon.
    #[arg(long, value_enum, default_value = "auto")]
    transport: Transport,
    /// For an `http` hook: the environment variable the agent reads the
    /// daemon's token from (sent as `Authorization: Bearer $VAR`).
    #[arg(long, value_name = "VAR", default_value = "HOOKWIRE_HOOKS_TOKEN")]
    token_env: String,
    /// Route the agent's model traffic through `hookwire gateway` at this
    /// URL too (Claude Code: `env.ANTHROPIC_BASE_URL` in its settings;
    /// Codex: a `hookwire` model provider in the `config.toml` beside its
    /// hooks), so that the gateway withholds a tool result the hook
    /// denied. The hooks then go to the same gateway (its `/v1/hooks/`
    /// routes) unless `--endpoint` says otherwise. Claude Code and Codex
    /// only.
    #[arg(long, value_name = "URL")]
    gateway: Option<String>,
    /// With `--gateway`, Codex: the environment variable Codex reads the
    /// API key it sends the gateway from.
    #[arg(long, value_name = "VAR", default_value = "OPENAI_API_KEY")]
    model_key_env: String,
}

/// A word of a shell command line, quoted when it needs to be.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-:=@+".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// Writes or prints the agent's hook configuration.
pub(crate) fn install(args: &InstallArgs) -> Result<(), CliError> {
    let config_error = |m: String| CliError::Hooks(hookwire_hooks::Error::Config(m));
    let agent = Agent::from_name(&args.agent)?;
    let gateway = match &args.gateway {
        Some(url) => {
            if let Some(why) = hookwire_hooks::unroutable(agent) {
                return Err(config_error(format!(
                    "--gateway cannot route {}'s model traffic: {why}",
                    agent.name()
                )));
            }
            Some(hookwire_hooks::gateway_root(url)?)
        }
        None => None,
    };
    // The gateway serves the hook routes too.
    let endpoint = args.endpoint.clone().or_else(|| gateway.clone());
    let bin = std::env::current_exe()
        .map_err(|e| config_error(format!("cannot locate the hookwire binary: {e}")))?;
    // The small `hookwire-hook` when it sits beside this binary (a start
    // about a bare process's), else `hookwire hook`.
    let small = bin.with_file_name("hookwire-hook");
    let mut command = if small.is_file() {
        format!(
            "{} --agent {}",
            shell_word(&small.to_string_lossy()),
            agent.name()
        )
    } else {
        format!(
            "{} hook --agent {}",
            shell_word(&bin.to_string_lossy()),
            agent.name()
        )
    };
    if let Some(endpoint) = &endpoint {
        command.push_str(&format!(" --endpoint {}", shell_word(endpoint)));
    }
    if let Some(token) = &args.token_file {
        let token = std::path::absolute(token)
            .map_err(|e| config_error(format!("{}: {e}", token.display())))?;
        command.push_str(&format!(
            " --token-file {}",
            shell_word(&token.to_string_lossy())
        ));
    }
    let path = match (&args.settings, args.scope) {
        (Some(path), _) => path.clone(),
        (None, Scope::Project) => hookwire_hooks::project_settings(agent),
        (None, Scope::User) => match std::env::var_os("HOME") {
            Some(home) => {
                let codex_home = std::env::var_os("CODEX_HOME").map(PathBuf::from);
                hookwire_hooks::user_settings(agent, home.as_ref(), codex_home.as_deref())?
            }
            None => return Err(config_error("HOME is not set (use --settings FILE)".into())),
        },
    };
    let existing = read_existing(&path)?;
    let http_endpoint = endpoint.as_deref().filter(|e| e.starts_with("http://"));
    let http = match args.transport {
        Transport::Command => false,
        Transport::Http if args.token_file.is_some() => {
            return Err(config_error(
                "an http hook reads the daemon's token from the agent's environment \
                 (--token-env VAR), not from --token-file"
                    .into(),
            ));
        }
        Transport::Http => true,
        // A token file is for the command hook; the http hook reads its
        // token from the agent's environment.
        Transport::Auto => {
            agent == Agent::ClaudeCode && http_endpoint.is_some() && args.token_file.is_none()
        }
    };
    let merged = if http {
        let base = http_endpoint.ok_or_else(|| {
            config_error("--transport http needs the daemon's --endpoint http://HOST:PORT".into())
        })?;
        hookwire_hooks::merge_http_settings(agent, existing.as_deref(), base, Some(&args.token_env))
    } else {
        hookwire_hooks::merge_settings(agent, existing.as_deref(), &command)
    }
    .map_err(|e| config_error(format!("{}: {e}", path.display())))?;
    // The model route: in the same file (Claude Code), or in the
    // `config.toml` beside the hooks (Codex).
    let mut files = vec![(path.clone(), merged)];
    if let Some(root) = &gateway {
        let routed = if agent == Agent::ClaudeCode {
            let last = files.pop().map(|(_, text)| text);
            (
                path.clone(),
                hookwire_hooks::merge_claude_base_url(last.as_deref(), root),
            )
        } else {
            let config = path.with_file_name("config.toml");
            let existing = read_existing(&config)?;
            let merged = hookwire_hooks::merge_codex_provider(
                existing.as_deref(),
                root,
                &args.model_key_env,
            );
            (config, merged)
        };
        let routed = match routed {
            (file, Ok(text)) => (file, text),
            (file, Err(e)) => return Err(config_error(format!("{}: {e}", file.display()))),
        };
        files.push(routed);
    }
    if args.print {
        for (file, text) in &files {
            if files.len() > 1 {
                out!("# {}\n", file.display());
            }
            out!("{text}");
        }
        return Ok(());
    }
    for (file, text) in &files {
        write_atomically(file, text)?;
    }
    outln!(
        "hookwire hooks: {} hooks of {} point at `{command}`",
        agent.name(),
        path.display()
    );
    if let Some(root) = &gateway {
        let (file, what) = if agent == Agent::ClaudeCode {
            (path.clone(), "env.ANTHROPIC_BASE_URL")
        } else {
            (
                path.with_file_name("config.toml"),
                "model_provider \"hookwire\"",
            )
        };
        outln!(
            "hookwire hooks: {} model traffic goes through the gateway at {root} ({what} in {})",
            agent.name(),
            file.display()
        );
    }
    Ok(())
}

/// The text of `path`, or `None` when there is no such file.
fn read_existing(path: &std::path::Path) -> Result<Option<String>, CliError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(CliError::Hooks(hookwire_hooks::Error::Config(format!(
            "cannot read {}: {e}",
            path.display()
        )))),
    }
}

/// Writes `text` beside `path` and renames it over: a reader sees the
/// old file or the new one, never half of it.
fn write_atomically(path: &std::path::Path, text: &str) -> Result<(), CliError> {
    let config_error = |m: String| CliError::Hooks(hookwire_hooks::Error::Config(m));
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| config_error(format!("cannot create {}: {e}", dir.display())))?;
    }
    let mut partial = path.as_os_str().to_owned();
    partial.push(".hookwire-partial");
    let partial = PathBuf::from(partial);
    std::fs::write(&partial, text)
        .and_then(|()| std::fs::rename(&partial, path))
        .map_err(|e| config_error(format!("cannot write {}: {e}", path.display())))
}
