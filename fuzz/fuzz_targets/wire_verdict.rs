//! libFuzzer entry point of the `wire_verdict` target: see
//! `hookwire_fuzz::wire_verdict` for the input format and the properties checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hookwire_fuzz::wire_verdict::run(data));
