//! The vocabulary every floor above speaks: typed ids, the kinds of work (phases, op sets,
//! layouts, roles), the kinds of communication, PyTorch's action notation, the units and their one
//! formatter, and the limits on what a scenario may ask for. Nothing here imports anything of
//! the crate: it is the bottom floor.

pub mod action;
pub mod comm;
pub mod ids;
pub mod layout;
pub mod limits;
pub mod parameter;
pub mod phase;
pub mod role;
pub mod units;
