//! Conversions between the domain types and the generated wire messages.
