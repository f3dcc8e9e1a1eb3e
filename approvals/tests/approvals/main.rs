//! The approval service's own tests in one binary (`cargo test -p
//! hookwire-approvals`): each module drives the service as a user would,
//! against real servers on loopback. Tests that need other products too
//! (a host's stream resolver, the page in a browser, the command) are in
//! the workspace's `tests/` and `cli/tests`.
//!
//! | module | what it proves |
//! | --- | --- |
//! | `run` | the service embedded through `Settings` and `run`, and the settings it refuses |
//! | `notify` | notifications against webhook receivers served here: signatures, Slack and Teams shapes, routing, retries, the dead-letter log |
//! | `example_programs` | the example `approval_service` as a user runs it |

mod example_programs;
mod notify;
mod run;
