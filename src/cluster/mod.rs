//! The cluster: one sweep over many nodes (issue 12, `docs/cluster.md`).
//!
//! The public API and the worker protocol are gRPC services generated from `proto/sleuth/v1/`
//! ([`proto`]); every request carries a bearer token ([`auth`]). The work itself and everything durable
//! live in Redis, so losing any process costs only time. So do the models' limits and the sweep's
//! budget ([`limits`], [`budget`]), which a worker's gateway checks through [`gate`].

pub mod auth;
pub mod budget;
pub mod gate;
pub mod limits;
pub mod proto;
pub mod queue;
