//! The host against real interceptor services on 127.0.0.1:0: every point
//! reaches the service with its fields, verdicts are applied to the action,
//! and every failure mode fails closed with its reserved reason.

mod dispatch;
mod failures;
mod points;

use hookwire_testkit as common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Scripted, bash, host, host_with, target_str};
use hookwire::pb::interceptor_server::{Interceptor as PbInterceptor, InterceptorServer};
use hookwire::{Composition, Decision, InterceptionPoint, Profile, Verdict, pb};
use hookwire_client::{
    InputRole, InterceptorBinding, ModelResponse, ShutdownReason, ToolCall, ToolResult,
};
use serde_json::{Map, Value, json};
use tonic::{Request, Response, Status};
