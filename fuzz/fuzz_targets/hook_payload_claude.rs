//! libFuzzer entry point of the `hook_payload_claude` target: see
//! `hookwire_fuzz::hook_payload` for the input format and the properties checked.
#![no_main]

use hookwire_hooks::Agent;

libfuzzer_sys::fuzz_target!(|data: &[u8]| hookwire_fuzz::hook_payload::run(
    &[Agent::ClaudeCode, Agent::Codex],
    data
));
