//! libFuzzer entry point of the `responses_stream` target: see
//! `hookwire_fuzz::responses_stream` for the input format and the properties checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hookwire_fuzz::responses_stream::run(data));
