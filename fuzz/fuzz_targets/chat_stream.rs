//! libFuzzer entry point of the `chat_stream` target: see
//! `hookwire_fuzz::chat_stream` for the input format and the properties checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hookwire_fuzz::chat_stream::run(data));
