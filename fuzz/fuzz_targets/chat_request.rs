//! libFuzzer entry point of the `chat_request` target: see
//! `hookwire_fuzz::chat_request` for the input format and the properties checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hookwire_fuzz::chat_request::run(data));
