//! `hookwire audit keygen`, `hookwire audit verify` and `hookwire audit
//! show` (module `show`), and the
//! `--records FILE --signing-key KEYFILE` options of `hookwire demo`: a
//! signing key pair, a signed and hash-chained record log
//! (`hookwire-audit`), and its check. Key material is never printed.

use std::path::PathBuf;

use clap::Subcommand;
use hookwire::InterceptionRecord;
use hookwire_audit::{
    AuditKey, Checkpoint, Delivery, Fsync, PublicKey, SigningSink, SinkOptions, checkpoint_path,
    public_key_path, verify_log,
};
use hookwire_client::RecordSink;

use crate::error::CliError;
use crate::output::PrintTo;

mod show;

/// Signing keys and signed record logs.
#[derive(Debug, Subcommand)]
pub(crate) enum AuditCommand {
    /// Write a new Ed25519 signing key (mode 0600) and its public key
    /// (KEYFILE.pub). Refuses to overwrite either file.
    #[command(after_help = "Example:\n  hookwire audit keygen --out audit.key")]
    Keygen {
        /// Where to write the signing key.
        #[arg(long, value_name = "KEYFILE")]
        out: PathBuf,
    },
    /// Check every line of a signed record log (signature, sequence, hash
    /// link). Exits 0 with the number of records verified, or 1 naming the
    /// first broken line.
    #[command(
        after_help = "Example:\n  hookwire audit verify records.jsonl --public-key audit.key.pub \\\n    --checkpoint records.jsonl.checkpoint"
    )]
    Verify {
        /// The record log (JSON lines).
        file: PathBuf,
        /// The public key of the signing key (KEYFILE.pub).
        #[arg(long, value_name = "KEYFILE.pub")]
        public_key: PathBuf,
        /// Also check against this signed checkpoint (a copy of
        /// FILE.checkpoint kept where the log's writer cannot change it),
        /// which catches a cut-off tail or a replaced log.
        #[arg(long, value_name = "CHECKPOINT")]
        checkpoint: Option<PathBuf>,
    },
    /// Show records as a table a person reads (time, session, sequence,
    /// point, decision, reason, who decided, the approver), filtered by
    /// session, point and decision, from a signed record log or the JSON
    /// lines of `--print-records` (`-`: stdin). Reads only: `verify`
    /// checks the signatures.
    #[command(
        after_help = "Examples:\n  hookwire audit show records.jsonl --decision deny\n  hookwire gateway ... --print-records | hookwire audit show - --session s-1\n  hookwire audit show records.jsonl --point pre_tool_call --json | jq .verdict"
    )]
    Show(show::ShowArgs),
}

/// Runs an audit subcommand.
pub(crate) fn run(command: &AuditCommand) -> Result<(), CliError> {
    match command {
        AuditCommand::Show(args) => show::run(args)?,
        AuditCommand::Keygen { out } => {
            AuditKey::generate_to(out)?;
            outln!("wrote signing key {} (mode 0600)", out.display());
            outln!("wrote public key  {}", public_key_path(out).display());
        }
        AuditCommand::Verify {
            file,
            public_key,
            checkpoint,
        } => {
            let key = PublicKey::load(public_key)?;
            let checkpoint = checkpoint
                .as_ref()
                .map(|c| Checkpoint::load(c, &key))
                .transpose()?;
            let verified = verify_log(file, &key, checkpoint.as_ref())?;
            outln!(
                "verified {} records in {}",
                verified.records,
                file.display()
            );
            match checkpoint {
                Some(c) => outln!("  the checkpoint's {} records are all there", c.count),
                None => outln!(
                    "  no --checkpoint: a cut-off tail goes unnoticed (keep a copy of {} to check against)",
                    checkpoint_path(file).display()
                ),
            }
        }
    }
    Ok(())
}

/// `hookwire demo --records FILE --signing-key KEYFILE`.
#[derive(Debug, clap::Args)]
pub(crate) struct RecordsArgs {
    /// Also append the session's records, signed and hash-chained, to FILE
    /// (checked by `hookwire audit verify`); a checkpoint goes to
    /// FILE.checkpoint.
    #[arg(long, value_name = "FILE", requires = "signing_key")]
    records: Option<PathBuf>,
    /// The signing key for --records (from `hookwire audit keygen`).
    #[arg(long, value_name = "KEYFILE", requires = "records")]
    signing_key: Option<PathBuf>,
}

impl RecordsArgs {
    /// The sink the options ask for (one that keeps nothing without them).
    pub(crate) fn open(&self) -> Result<SignedRecords, CliError> {
        let (Some(file), Some(key)) = (&self.records, &self.signing_key) else {
            return Ok(SignedRecords(None));
        };
        // A short session: every line on disk before its action proceeds.
        let options = SinkOptions::default()
            .delivery(Delivery::Inline)
            .fsync(Fsync::EveryRecord);
        Ok(SignedRecords(Some(SigningSink::open(
            file,
            AuditKey::load(key)?,
            options,
        )?)))
    }
}

/// The demo's signed record log, when asked for.
#[derive(Debug, Clone)]
pub(crate) struct SignedRecords(Option<SigningSink>);

impl SignedRecords {
    /// Syncs the log and says where it is, on `to` (stderr for a command
    /// whose stdout carries records or a protocol); fails when a record
    /// could not be written.
    pub(crate) fn finish(&self, to: PrintTo) -> Result<(), CliError> {
        if let Some(sink) = &self.0 {
            let status = sink.sync()?;
            let said = format!(
                "\nsigned records: {} lines in {} (checkpoint {})",
                status.lines,
                sink.path().display(),
                checkpoint_path(sink.path()).display()
            );
            match to {
                PrintTo::Stdout => outln!("{said}"),
                PrintTo::Stderr => errln!("{said}"),
            }
        }
        Ok(())
    }
}

impl RecordSink for SignedRecords {
    fn record(&self, record: &InterceptionRecord) {
        if let Some(sink) = &self.0 {
            sink.record(record);
        }
    }
}
