//! libFuzzer entry point of the `json_text` target: see
//! `hookwire_fuzz::json_text` for the input format and the properties checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hookwire_fuzz::json_text::run(data));
