//! Output layers.
