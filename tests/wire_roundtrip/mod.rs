//! Property tests of the wire layer: every valid context of every point and
//! every verdict survives domain → `pb` → protobuf bytes → `pb` → domain
//! unchanged, JSON text decodes exactly, and malformed input is refused
//! without panicking.

mod contexts;
mod fixed;
mod json_values;
mod verdicts;

use contexts::*;
use json_values::*;

use hookwire::json::{self, InvalidJson};
use hookwire::pb;
use hookwire::wire::{PointRequest, context_from_request, context_to_request};
use hookwire::{
    AgentContext, Decision, InterceptionPoint, InterceptorResponse, InvalidVerdict,
    RESPONSE_EXTENSIONS_MAX_BYTES, Transform, Verdict, Warning,
};
use proptest::prelude::*;
use prost::Message;
use serde_json::{Map, Value, json};
