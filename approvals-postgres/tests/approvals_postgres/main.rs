//! The shared approval queue's tests in one binary (`cargo test -p
//! hookwire-approvals-postgres`), each on a throwaway PostgreSQL cluster
//! (`hookwire_testkit::postgres`).
//!
//! | module | what it proves |
//! | --- | --- |
//! | `store_contract` | `PostgresStore` keeps the contract every approval store keeps |
//! | `shared_queue` | several instances on one database: requests, decisions, withdrawals, the audit log |
//! | `grpc_edge` | the shared queue behind the real gRPC edge, host and approver on different instances |
//! | `failover` | a host moving between instances over the wire |
//! | `common` | the fixtures the modules share |

mod common;
mod failover;
mod grpc_edge;
mod shared_queue;
mod store_contract;
