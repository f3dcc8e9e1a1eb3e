//! libFuzzer entry point of the `messages_request` target: see
//! `hookwire_fuzz::messages_request` for the input format and the properties checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hookwire_fuzz::messages_request::run(data));
