//! Composition policies: how a Replicated region's work shares a rank's stream with the
//! wavefront. Mpipe's transpose is the one implemented.

pub mod transpose;
