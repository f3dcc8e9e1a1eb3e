//! Both hooks commands' `--help` carries examples (the Unix socket's
//! among them). The daemon operated — on a Unix socket, with its metrics —
//! is tested with it in `hooks/tests/hooks/`.

use std::process::Command;

#[test]
fn the_help_of_both_commands_has_examples() {
    for args in [&["hooks", "serve", "--help"][..], &["hook", "--help"][..]] {
        let out = Command::new(env!("CARGO_BIN_EXE_hookwire"))
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("Examples:"), "{args:?}: {text}");
        assert!(text.contains("unix:"), "{args:?}: {text}");
    }
}
