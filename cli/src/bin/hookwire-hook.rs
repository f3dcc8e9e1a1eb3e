//! `hookwire-hook`: the command hook in a binary of its own, for agents
//! that spawn a process per hook call. It does what `hookwire hook` does
//! (`hookwire_hooks::relay`: the payload from stdin to the daemon, the
//! agent's output or its block), and nothing else: no argument parser, no
//! runtime, no logging, so that its start costs about what a bare process
//! costs. `hookwire hooks install` writes it into an agent's settings when
//! it sits beside `hookwire`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use hookwire_hooks::relay::{self, DEFAULT_TIMEOUT, RelayArgs};

const HELP: &str = "\
hookwire-hook: relay one coding-agent hook payload (stdin) to `hookwire hooks serve`
and print the agent's answer (stdout).

Usage: hookwire-hook --agent NAME [--endpoint URL] [--token-file FILE] [--timeout-ms MS]

Options:
  --agent NAME        claude-code, codex, gemini-cli, cursor or copilot
  --endpoint URL      the daemon: http://HOST:PORT or unix:/path/hooks.sock
                      (else HOOKWIRE_HOOKS_ENDPOINT, else http://127.0.0.1:8790)
  --token-file FILE   the daemon's token (else HOOKWIRE_HOOKS_TOKEN; optional
                      over a Unix socket)
  --timeout-ms MS     how long to wait for the payload and the daemon (10000)
  -h, --help          this text

Example, the daemon on its Unix socket:
  echo '{\"session_id\":\"s1\",\"hook_event_name\":\"SessionStart\"}' | \\
    hookwire-hook --agent claude-code --endpoint \"unix:$XDG_RUNTIME_DIR/hookwire/hooks.sock\"

Exit status: 0 with the agent's output on stdout; 2 with the reason on stderr when
the call is blocked because it could not be governed (daemon down, slow, refused,
garbage, a bad command line); for copilot, 0 with its deny on stdout.
";

/// The command line, read strictly: an unknown or repeated option is a
/// block, never a guess.
fn parse(mut args: impl Iterator<Item = String>) -> Result<Option<RelayArgs>, (String, String)> {
    let mut agent: Option<String> = None;
    let mut endpoint = None;
    let mut token_file = None;
    let mut timeout = None;
    while let Some(flag) = args.next() {
        if flag == "-h" || flag == "--help" {
            return Ok(None);
        }
        let (name, inline) = match flag.split_once('=') {
            Some((n, v)) => (n.to_owned(), Some(v.to_owned())),
            None => (flag.clone(), None),
        };
        let named: String = agent.clone().unwrap_or_default();
        let bad = |why: String| (named.clone(), format!("hookwire-hook: {why} (see --help)"));
        let Some(value) = inline.or_else(|| args.next()) else {
            return Err(bad(format!("{name} needs a value")));
        };
        let slot_taken = match name.as_str() {
            "--agent" => agent.replace(value).is_some(),
            "--endpoint" => endpoint.replace(value).is_some(),
            "--token-file" => token_file.replace(PathBuf::from(value)).is_some(),
            "--timeout-ms" => {
                let ms: u64 = value
                    .parse()
                    .map_err(|_| bad(format!("--timeout-ms takes milliseconds, not {value:?}")))?;
                timeout.replace(Duration::from_millis(ms)).is_some()
            }
            other => return Err(bad(format!("unknown option {other:?}"))),
        };
        if slot_taken {
            return Err(bad(format!("{name} is given twice")));
        }
    }
    let Some(agent) = agent else {
        return Err((
            String::new(),
            "hookwire-hook: --agent NAME is required (see --help)".into(),
        ));
    };
    Ok(Some(RelayArgs {
        agent,
        endpoint,
        token_file,
        timeout: timeout.unwrap_or(DEFAULT_TIMEOUT),
    }))
}

fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(Some(args)) => args,
        Ok(None) => {
            print!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Err((agent, reason)) => return ExitCode::from(relay::block(&agent, &reason)),
    };
    let agent = args.agent.clone();
    // Whatever fails, a panic included, is the agent's own block.
    std::panic::set_hook(Box::new(move |info| {
        let code = relay::block(&agent, &format!("hookwire-hook: internal error: {info}"));
        std::process::exit(i32::from(code));
    }));
    ExitCode::from(relay::relay(&args, "hookwire-hook"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(args: &[&str]) -> Result<Option<RelayArgs>, (String, String)> {
        parse(args.iter().map(|s| (*s).to_owned()))
    }

    #[test]
    fn the_command_line_is_read_strictly() {
        let a = of(&[
            "--agent",
            "codex",
            "--timeout-ms=250",
            "--endpoint",
            "unix:/s",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(a.agent, "codex");
        assert_eq!(a.timeout, Duration::from_millis(250));
        assert_eq!(a.endpoint.as_deref(), Some("unix:/s"));
        assert!(of(&["--help"]).unwrap().is_none());
        for bad in [
            &["--agent"][..],
            &["--endpoint", "unix:/s"],
            &["--agent", "codex", "--agent", "cursor"],
            &["--agent", "codex", "--nope", "x"],
            &["--agent", "codex", "--timeout-ms", "soon"],
        ] {
            let (_, why) = of(bad).unwrap_err();
            assert!(why.starts_with("hookwire-hook: "), "{bad:?}: {why}");
        }
        let (agent, _) = of(&["--agent", "copilot", "--nope", "x"]).unwrap_err();
        assert_eq!(agent, "copilot", "a block in the named agent's terms");
    }
}
