//! libFuzzer entry point of the `wire_context` target: see
//! `hookwire_fuzz::wire_context` for the input format and the properties checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hookwire_fuzz::wire_context::run(data));
