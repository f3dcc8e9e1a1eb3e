//! The integration tests that capture every log line of their process
//! (the checks that no secret reaches a log): a binary of their own, so
//! that the TRACE subscriber they install does not slow the other tests.

mod approval_common;
mod approval_security;
mod declaration_log;
