//! What a layer is for.

use serde::{Deserialize, Serialize};

/// What a layer is for. The algebra never reads the role; the UI and the workload model do.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Encoder,
    Projector,
    Backbone,
    Generator,
    #[default]
    Other,
}

impl Role {
    pub const ALL: [Role; 5] = [
        Role::Encoder,
        Role::Projector,
        Role::Backbone,
        Role::Generator,
        Role::Other,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Role::Encoder => "encoder",
            Role::Projector => "projector",
            Role::Backbone => "backbone",
            Role::Generator => "generator",
            Role::Other => "other",
        }
    }
}
