//! Composition policies: how a Replicated region's work shares a rank's stream with the
//! wavefront: Mpipe's transpose, and BigMac's nested encoder.

pub mod nested;
pub mod transpose;
