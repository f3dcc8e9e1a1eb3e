//! `hookwire gateway token` and `hookwire mcp token`: one way to make a
//! client token for an edge's clients file (`NAME SHA256-HEX` a line,
//! `hookwire_edge::clients`). The token goes alone to stdout and its
//! clients-file line alone to stderr, so that each can be redirected into
//! its own file and the token is never written beside its hash.

use crate::error::CliError;

/// What every client token starts with, so that a secret scanner knows
/// one.
const CLIENT_TOKEN_PREFIX: &str = "hwc_";

/// The `token` subcommand both edges take.
#[derive(Debug, clap::Args)]
pub(crate) struct TokenArgs {
    /// The client's name in the clients file: printable ASCII without
    /// spaces, at most 128 bytes.
    #[arg(long, value_name = "NAME")]
    pub(crate) name: String,
}

/// Prints a fresh client token on stdout and its clients-file line on
/// stderr.
pub(crate) fn print(args: &TokenArgs) -> Result<(), CliError> {
    if !hookwire_edge::clients::is_client_name(&args.name) {
        return Err(CliError::ClientToken(
            "the name must be printable ASCII without spaces, at most 128 bytes".into(),
        ));
    }
    let secret = hookwire_edge::token::random_hex::<32>()
        .map_err(|e| CliError::ClientToken(e.to_string()))?;
    let token = format!("{CLIENT_TOKEN_PREFIX}{secret}");
    outln!("{token}");
    errln!("{} {}", args.name, hookwire_edge::token::sha256_hex(&token));
    Ok(())
}
