//! libFuzzer entry point of the `declaration` target: see
//! `hookwire_fuzz::declaration` for the input format and the properties checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hookwire_fuzz::declaration::run(data));
