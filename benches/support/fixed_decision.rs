//! The floor of a command hook: what an agent pays for any command hook
//! at all. It reads the hook payload from stdin to its end (as a hook
//! must, or the agent's write may fail) and prints one fixed decision,
//! Claude Code's "proceed" (`{}`), deciding nothing. `benches/load`'s
//! `hooks` section measures `hookwire hook` against it.

use std::io::{Read, Write};

fn main() {
    let mut sink = Vec::new();
    let code = match std::io::stdin().read_to_end(&mut sink) {
        Ok(_) => {
            let mut out = std::io::stdout().lock();
            match out.write_all(b"{}\n").and_then(|()| out.flush()) {
                Ok(()) => 0,
                Err(_) => 2,
            }
        }
        Err(_) => 2,
    };
    std::process::exit(code);
}
