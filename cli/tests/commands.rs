//! The `hookwire` command's tests in one binary: each module spawns the
//! built binary as an operator runs it, against real services on
//! loopback.

mod approval_bot;
mod approvals_notify;
mod approvals_serve;
mod audit;
mod check;
mod check_any_service;
mod command_line;
mod dashboard;
mod declarations;
mod demo;
mod deploy;
mod deploy_cluster;
mod emit;
mod gateway;
mod hooks;
mod hooks_codex;
mod hooks_copilot;
mod hooks_cursor;
mod hooks_faults;
mod hooks_gemini;
mod hooks_install;
mod hooks_ops;
mod image;
mod metrics;
mod operable;
mod policy;
mod policy_cedar;
mod policy_ops;
