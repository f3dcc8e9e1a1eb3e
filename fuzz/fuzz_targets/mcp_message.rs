//! libFuzzer entry point of the `mcp_message` target: see
//! `hookwire_fuzz::mcp_message` for the input format and the properties checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hookwire_fuzz::mcp_message::run(data));
