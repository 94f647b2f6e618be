//! Helpers shared by the integration tests.

#![allow(dead_code)] // each test crate uses a different subset

pub mod tmux;
