pub mod fake;
pub mod moto;
