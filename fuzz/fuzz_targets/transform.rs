//! libFuzzer entry point of the `transform` target: see
//! `hookwire_fuzz::transform` for the input format and the properties checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hookwire_fuzz::transform::run(data));
